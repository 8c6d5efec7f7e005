/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The dialogs the SIP server opens (docs/design.md, "Dialogs the server
 * opens"), learnt by the egress program from the INVITEs it sends.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"

/*
 * egress_learn puts a dialog the server opened in the table, every field
 * but the time zero. A dialog the table holds already keeps its entry and
 * what was recorded in it: a proxy sends out the INVITE the filter
 * admitted with the same Call-ID, and a retransmission changes nothing.
 * The lookup keeps it among the recently used. A global function, so that
 * key and value stay off the program's own frame.
 */
__noinline int egress_learn(__u64 callid, __u64 now)
{
	struct cac_dialog d = {.invite_ns = now};
	if (!callid || bpf_map_lookup_elem(&dialogs, &callid))
		return 0;
	bpf_map_update_elem(&dialogs, &callid, &d, BPF_NOEXIST);
	return 0;
}
