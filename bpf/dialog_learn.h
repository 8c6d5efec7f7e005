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
#include "dialog.h"

/*
 * egress_learn puts a dialog the server opened in the table, with no
 * transaction. A dialog the table holds already keeps its entry and what
 * was recorded in it: a proxy sends out the INVITE the filter admitted
 * with the same Call-ID, and a retransmission changes nothing. A global
 * function, so that its key stays off the program's own frame.
 */
__noinline int egress_learn(__u64 callid, __u64 now)
{
	if (!callid)
		return 0;
	struct cac_dialog_set *s = dialog_set(callid);
	if (!s)
		return 0;
	struct cac_dialog *d = dialog_way(s, callid);
	if (d->callid != callid)
		dialog_write(d, callid, now, 0);
	return 0;
}
