/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The dialogs the SIP server opens (docs/design.md, "Dialogs the server
 * opens"), learnt by the egress program from the INVITEs it sends; and the
 * dialogs whose INVITE the server answers with a final refusal, forgotten
 * ("Dialogs bound to their peers").
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "dialog.h"
#include "sip_txn.h"

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

/* A dialog's flag: the server answered its INVITE with a 2xx, so a later
 * refusal (of a re-INVITE) does not end it. */
#define DIALOG_ANSWERED 1

/* cseq_invite reports whether the CSeq value at s names INVITE, in any
 * case: blanks, a number, blanks, then the method and a blank or the line's
 * end. A global function: its bytes are read once for the verifier. */
__noinline int cseq_invite(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 s)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (s > SIP_SCAN_MAX + 16)
		return 0;
	sip_skip_sp(&m, &s);
	int digits = 0;
	for (int i = 0; i < 10; i++) {
		int c = sip_byte(&m, s);
		if (c < '0' || c > '9')
			break;
		digits++;
		s++;
	}
	__u64 at = s;
	sip_skip_sp(&m, &s);
	if (!digits || s == at)
		return 0;
	__u64 w;
	if (s + 8 > mlen || !sip_load_word(&m, m.off + s, &w))
		return 0;
	int c = sip_byte(&m, s + 6);
	return ((w | FOLD(6)) & BYTES(6)) == (W_INVITE & BYTES(6)) && (c < 0 || is_sp(c) || c == '\r' || c == '\n');
}

/*
 * egress_answer reads a final answer the server sends (code 200 to 699)
 * to an INVITE: a 2xx marks its dialog answered, and a refusal (300 and
 * up) of one not answered forgets it, so that a Call-ID learnt from an
 * INVITE the server refused opens no path. where packs the frame as
 * where_pack does. A global function: the walk and the keys stay off
 * the program's own frame.
 */
__noinline int egress_answer(struct __sk_buff *skb, __u64 where, __u32 code)
{
	if (!skb || code < 200)
		return 0;
	struct frame f = where_frame(skb, where);
	__u64 at = sip_find_txn(skb, f.msgoff, f.msglen);
	__u64 c = at & 0xffff, s = (at >> 16) & 0xffff;
	if (!c || !s || !cseq_invite(skb, f.msgoff, f.msglen, s))
		return 0;
	struct cac_dialog *d = dialog_find(sip_hash_value(skb, f.msgoff, f.msglen, c));
	if (!d)
		return 0;
	if (code < 300)
		d->flags |= DIALOG_ANSWERED;
	else if (!(d->flags & DIALOG_ANSWERED))
		d->callid = 0; /* the way is free */
	return 0;
}
