/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Dialogs (docs/design.md, "Dialogs"). A To tag is anyone's to write, so
 * the filter learns the dialogs it admitted, by the hash of their INVITE's
 * Call-ID: an in-dialog request of a known dialog passes uncharged, one of
 * an unknown dialog is held by the sip-indialog limits. The table is an
 * LRU of dialog-table entries: a full one forgets its least recently used
 * dialog, whose requests are then held like a stranger's.
 *
 * Each dialog keeps its INVITE's transaction too, for its retransmissions
 * (invite.h).
 */
#pragma once

#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "sip_hdr.h"

/* dialog_known reports whether callid names a dialog the filter admitted;
 * the lookup keeps it among the recently used. A global function: its key
 * stays off the stack of the program's deepest call chain. */
__noinline int dialog_known(__u64 callid)
{
	return callid && bpf_map_lookup_elem(&dialogs, &callid) != NULL;
}
