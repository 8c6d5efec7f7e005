/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * INVITE retransmissions (docs/design.md, "Retransmissions"). The dialog
 * table's entry of an admitted INVITE keeps its transaction (sip_txn.h): a
 * retransmission within Timer B passes uncharged. A refused INVITE's
 * transaction is remembered in a table of its own, so that a flood of them
 * never evicts a dialog: its retransmission is refused again for nothing.
 */
#pragma once

#include "maps.h"
#include "dialog.h"
#include "reject.h"
#include "sip_txn.h"
#include "recent.h"
#include "where.h"

/* A CPU's budget of refused INVITE transactions remembered, per second:
 * a flood of refused INVITEs, each its own transaction, would otherwise
 * churn the table and cost a header walk more each. Past it, a
 * retransmission of a refused INVITE is judged as a new one
 * (REFUSED_NEW_PER_SECOND, shared.h). */

/* What invite_retransmit says of an INVITE that repeats no transaction the
 * filter saw. */
#define RETRANSMIT_NONE (-2)

/* l3_frame is the struct frame of the IP header that l3 names (a frame
 * word's where_ip), on the packet of ctx. */
static __always_inline struct frame l3_frame(struct xdp_md *ctx, __u64 l3)
{
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.l3off = where_l3off(l3),
		.family = where_family(l3),
	};
	return f;
}

/* msg_txn hashes the transaction of the message that msg names (a frame
 * word's where_msg), sent from the source of the IP header that l3 names
 * (where_ip), and sets *callid. The source is the sender's:
 * a retransmission comes from where the INVITE came from, and a copy of
 * an admitted INVITE from another address is a new call. */
static __always_inline __u64 msg_txn(struct xdp_md *ctx, __u64 msg, __u64 l3, __u64 *callid)
{
	__u64 txn = sip_txn(ctx, where_msgoff(msg), where_msglen(msg), callid);
	if (!txn)
		return 0;
	struct frame f = l3_frame(ctx, l3);
	union prefix_words p;
	prefix_of(&f, &p);
	txn = txn_mix(txn_mix(txn, p.w[1]), p.w[2]);
	return txn ? txn : 1;
}

/*
 * admitted_copy says whether a message of transaction txn at now belongs
 * to the admitted INVITE of dialog d, within window of it: -1 when it does
 * not, 1 for one that passes, 0 once the INVITE's allowance of copies
 * (CAC_RETRANSMITS_MAX) is spent. The count is an atomic add, so that CPUs
 * racing on the copies of one INVITE never pass more than the allowance
 * between them (a plain increment lost one pass's worth per race). Past the
 * allowance it is read and not written, bar the one add each racing CPU
 * may make, so that a flood of copies leaves the entry's line shared.
 */
_Static_assert(__builtin_offsetof(struct cac_dialog, retransmits) % 8 == 0 &&
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "retransmits is the low half of an aligned 64-bit word");

static __always_inline int admitted_copy(struct cac_dialog *d, __u64 txn, __u64 now, __u64 window)
{
	if (!d || d->txn != txn || now - d->invite_ns >= window)
		return -1;
	if (d->retransmits >= CAC_RETRANSMITS_MAX)
		return 0;
	/* The add that returns the count before it is of the 64-bit word
	 * the count is the low half of (the objects are built for cpu v1,
	 * which has no fetching add of 32 bits). The count stays far from
	 * a carry into the caller: at most the allowance and one add for
	 * each CPU racing past it. */
	__u64 *word = (__u64 *)&d->retransmits;
	return (__u32)__sync_fetch_and_add(word, 1) < CAC_RETRANSMITS_MAX;
}

/*
 * invite_retransmit says whether an INVITE retransmits a transaction seen
 * within Timer B: ADMITTED for one the filter admitted (while it has not
 * passed CAC_RETRANSMITS_MAX times), the reason for one it refused, or
 * RETRANSMIT_NONE. Both tables are keyed by the Call-ID, so the INVITE of
 * a new call, which neither holds, hashes no more than its Call-ID: the
 * CSeq and Via are hashed only for a Call-ID the filter has seen, and the
 * tables are looked in only for one recent.h says may be there.
 */
__noinline int invite_retransmit(struct xdp_md *ctx, __u64 msg, __u64 l3, __u64 now)
{
	__u64 callid = sip_callid(ctx, where_msgoff(msg), where_msglen(msg));
	if (!callid || !recent_maybe(callid, now))
		return RETRANSMIT_NONE;
	struct cac_dialog *d = dialog_find(callid);
	struct cac_refused *r = bpf_map_lookup_elem(&refused, &callid);
	if (!d && !r)
		return RETRANSMIT_NONE;
	__u64 txn = msg_txn(ctx, msg, l3, &callid);
	if (!txn)
		return RETRANSMIT_NONE;
	int copy = admitted_copy(d, txn, now, CAC_TIMER_B_NS);
	if (copy >= 0)
		return copy ? ADMITTED : RETRANSMIT_NONE;
	if (r && r->txn == txn && now - r->refused_ns < CAC_TIMER_B_NS && r->reason < CAC_NUM_REASONS)
		return r->reason;
	return RETRANSMIT_NONE;
}

/*
 * invite_cancel says whether a CANCEL cancels an INVITE the filter admitted
 * (the same Call-ID, CSeq number, top Via and source, CAC_CANCEL_NS at
 * most after it): ADMITTED for one that does, within the allowance the
 * INVITE's copies share (CAC_RETRANSMITS_MAX), else RETRANSMIT_NONE.
 */
__noinline int invite_cancel(struct xdp_md *ctx, __u64 msg, __u64 l3, __u64 now)
{
	__u64 callid;
	__u64 txn = msg_txn(ctx, msg, l3, &callid);
	if (!txn)
		return RETRANSMIT_NONE;
	return admitted_copy(dialog_find(callid), txn, now, CAC_CANCEL_NS) > 0 ? ADMITTED : RETRANSMIT_NONE;
}

/* invite_admitted remembers the dialog and transaction of an admitted
 * INVITE. A replay admitted again, past its allowance, leaves the entry
 * as it is: its copies stay charged until Timer B is over. */
__noinline int invite_admitted(struct xdp_md *ctx, __u64 msg, __u64 l3, __u64 now)
{
	__u64 callid;
	__u64 txn = msg_txn(ctx, msg, l3, &callid);
	if (!callid)
		return 0;
	struct cac_dialog_set *s = dialog_set(callid);
	if (!s)
		return 0;
	struct cac_dialog *d = dialog_way(s, callid);
	/* Noted before the early return too: a copy admitted again after an
	 * upgrade that made the recent table afresh marks it for the rest. */
	recent_note(callid, now);
	if (d->callid == callid && txn && d->txn == txn && now - d->invite_ns < CAC_TIMER_B_NS)
		return 0;
	if (d->callid == callid && d->caller) {
		/* Another INVITE of a known dialog (a new try after a
		 * challenge): its transaction is the one to repeat, but the
		 * sides stay those first learnt, whoever sent this one. */
		d->invite_ns = now;
		d->txn = txn;
		d->retransmits = 0;
		return 0;
	}
	struct frame f = l3_frame(ctx, l3);
	__u32 callee = d->callid == callid ? d->callee : 0;
	dialog_write(d, callid, now, txn, dialog_peer(&f, 0), callee);
	return 0;
}

/* invite_refused remembers the transaction of a refused INVITE by its
 * Call-ID, within this CPU's budget for the second: a later refused
 * transaction of the Call-ID takes the place of an earlier one. */
__noinline int invite_refused(struct xdp_md *ctx, __u64 msg, __u64 l3, __u64 now, __u32 reason)
{
	__u32 zero = 0;
	struct reject_budget *b = bpf_map_lookup_elem(&refused_budget, &zero);
	if (!b)
		return 0;
	budget_second(b, now);
	if (b->used >= REFUSED_NEW_PER_SECOND)
		return 0;
	__u64 callid;
	__u64 txn = msg_txn(ctx, msg, l3, &callid);
	if (!txn)
		return 0;
	b->used++;
	recent_note(callid, now);
	struct cac_refused r = {.refused_ns = now, .reason = reason, .txn = txn};
	bpf_map_update_elem(&refused, &callid, &r, BPF_ANY);
	return 0;
}
