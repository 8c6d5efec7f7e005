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
 * transaction, and callee, the fold of the address the INVITE goes to,
 * for its other side. A dialog the table holds already keeps its entry
 * and what was recorded in it but takes callee as its other side: a
 * proxy sends out the INVITE the filter admitted with the same Call-ID,
 * toward the callee whose requests then come back. A global function, so
 * that its key stays off the program's own frame.
 */
__noinline int egress_learn(__u64 callid, __u64 now, __u32 callee)
{
	if (!callid)
		return 0;
	struct cac_dialog_set *s = dialog_set(callid);
	if (!s)
		return 0;
	struct cac_dialog *d = dialog_way(s, callid);
	if (d->callid != callid)
		dialog_write(d, callid, now, 0, 0, callee);
	else if (d->callee != callee)
		d->callee = callee;
	return 0;
}
