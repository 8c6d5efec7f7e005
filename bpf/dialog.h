/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Dialogs (docs/design.md, "Dialogs"). A To tag is anyone's to write, so
 * the filter learns the dialogs it admitted, by the hash of their INVITE's
 * Call-ID, bound to their two sides: an in-dialog request of a known
 * dialog from one of its sides passes uncharged; one of an unknown dialog,
 * or of a known one from anywhere else, is held by the sip-indialog limits.
 *
 * The table is an array of sets of CAC_DIALOG_WAYS dialogs; a Call-ID's
 * hash names its set. A new dialog takes a free way of its set, or else
 * the way of the set's oldest INVITE, whose requests are then held like a
 * stranger's. A lookup writes nothing, so a flood of a known dialog's
 * requests leaves its lines shared between CPUs.
 *
 * Each dialog keeps its INVITE's transaction too, for its retransmissions
 * (invite.h).
 */
#pragma once

#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "sip_hdr.h"
#include "where.h"
#include "clock.h"

/* The dialog table's sets less one, a power of two less one: the loader
 * sets it with the table's size (maps.SizeDialogs). */
volatile const __u32 dialog_mask = 16383;

/* dialog_set is the set of a Call-ID's hash. The FNV hash's low bits see
 * only the low bits of each word it took in, so the index is taken from
 * the high half of a multiply of both halves folded together: every bit
 * of the hash moves it. */
static __always_inline struct cac_dialog_set *dialog_set(__u64 callid)
{
	__u64 x = (callid ^ (callid >> 32)) * 0x9e3779b97f4a7c15ULL;
	__u32 i = (__u32)(x >> 32) & dialog_mask;
	return bpf_map_lookup_elem(&dialogs, &i);
}

/* dialog_way is the way of s that holds callid, or else the way a new
 * dialog of callid takes: the first free one, or else the one of the
 * oldest INVITE (the first of them). The caller tells the two apart by
 * the way's callid. */
static __always_inline struct cac_dialog *dialog_way(struct cac_dialog_set *s, __u64 callid)
{
	struct cac_dialog *v = &s->way[0];
	for (int w = 0; w < CAC_DIALOG_WAYS; w++) {
		struct cac_dialog *d = &s->way[w];
		if (d->callid == callid)
			return d;
		if (v->callid && (!d->callid || d->invite_ns < v->invite_ns))
			v = d;
	}
	return v;
}

/* dialog_find is the dialog of callid, or NULL. */
static __always_inline struct cac_dialog *dialog_find(__u64 callid)
{
	if (!callid)
		return NULL;
	struct cac_dialog_set *s = dialog_set(callid);
	if (!s)
		return NULL;
	struct cac_dialog *d = dialog_way(s, callid);
	return d->callid == callid ? d : NULL;
}

/* dialog_write makes way d the dialog of callid. Two CPUs may write one
 * set at once, and a reader may see a way half written: the Call-ID goes
 * in last, so a way names a Call-ID only once someone admitted it (or the
 * server sent it), and a torn way at worst pairs a Call-ID with another
 * INVITE's transaction, whose copies are then charged as new calls. */
static __always_inline void dialog_write(struct cac_dialog *d, __u64 callid, __u64 now, __u64 txn,
					 __u32 caller, __u32 callee)
{
	d->invite_ns = now;
	d->txn = txn;
	d->retransmits = 0;
	d->caller = caller;
	d->callee = callee;
	d->tat_ns = 0;
	d->flags = 0;
	asm volatile("" ::: "memory");
	d->callid = callid;
}

/* peer_fold is what a dialog keeps of an address, 16 bytes with IPv4
 * mapped into IPv6 (hi and lo its two halves as little-endian words): the
 * high half of a multiply of both, never 0. cac.DialogPeer is the same in
 * Go. */
static __always_inline __u32 peer_fold(__u64 hi, __u64 lo)
{
	__u64 x = (hi ^ (lo * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
	__u32 p = x >> 32;
	return p ? p : 1;
}

/* dialog_peer is the fold of a frame's source address, or its destination
 * when dst is set (a frame the server sends); 0 without an IP header. */
static __always_inline __u32 dialog_peer(struct frame *f, int dst)
{
	void *data = f->data, *data_end = f->data_end;
	__u8 a[16] = {};

	if (f->family == 4) {
		struct iphdr *ip = data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > data_end)
			return 0;
		a[10] = a[11] = 0xff;
		__builtin_memcpy(&a[12], dst ? &ip->daddr : &ip->saddr, 4);
	} else if (f->family == 6) {
		struct ipv6hdr *ip6 = data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > data_end)
			return 0;
		__builtin_memcpy(a, dst ? ip6->daddr : ip6->saddr, 16);
	} else {
		return 0;
	}
	__u64 hi, lo;
	__builtin_memcpy(&hi, &a[0], 8);
	__builtin_memcpy(&lo, &a[8], 8);
	return peer_fold(hi, lo);
}

/* dialog_take takes one request from d's bucket at now (GCRA): 1 while
 * the dialog is within CAC_DIALOG_CPS and CAC_DIALOG_BURST, else 0. Two
 * CPUs racing on one dialog's bucket let a request more through at most. */
static __always_inline int dialog_take(struct cac_dialog *d, __u64 now)
{
	const __u64 interval = 1000000000ULL / CAC_DIALOG_CPS;
	__u64 tat = d->tat_ns > now ? d->tat_ns : now;
	if (tat - now > (CAC_DIALOG_BURST - 1) * interval)
		return 0;
	d->tat_ns = tat + interval;
	return 1;
}

/* dialog_verified reports whether callid names a dialog the filter knows,
 * the frame where packs (where.h) comes from one of its sides, the dialog
 * has not been silent for CAC_DIALOG_IDLE_NS, and its bucket holds a
 * request for it. A global function: its lookup key stays off the stack
 * of the program's deepest call chain. A forking proxy's INVITEs of one
 * Call-ID leave the last callee as the dialog's other side; the others'
 * requests are held as strangers' are, which a call's few pass within. */
__noinline int dialog_verified(CAC_CTX *ctx, __u64 where, __u64 callid)
{
	if (!ctx)
		return 0;
	struct frame f = where_frame(ctx, where);
	struct cac_dialog *d = dialog_find(callid);
	__u32 peer = dialog_peer(&f, 0);
	if (!d || !peer || (d->caller != peer && d->callee != peer))
		return 0;
	/* The bucket's arrival time is past the last verified request (by
	 * at most a burst's worth): the dialog's last sign of life. */
	__u64 now = now_ns(), last = d->tat_ns > d->invite_ns ? d->tat_ns : d->invite_ns;
	if (now > last && now - last >= CAC_DIALOG_IDLE_NS)
		return 0;
	return dialog_take(d, now);
}
