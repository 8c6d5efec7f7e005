/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * An INVITE's transaction (docs/design.md, "Retransmissions"): the hash of
 * its Call-ID, CSeq number and top Via, which a retransmission repeats
 * byte for byte (RFC 3261 §17.1.1.3), and so does the CANCEL of it. One walk over the header
 * lines finds all three, with the bounds of sip_next_line; each value is
 * hashed as sip_hash_value hashes a Call-ID; one longer than
 * SIP_HASH_MAX makes the request name no transaction, so that requests
 * differing past it are never taken for copies. internal/model/classify/txn.go is the
 * same in Go.
 */
#pragma once

#include "sip_hdr.h"
#include "sip_index.h"

/* Which header txn_header_at found, in the order of their slots in
 * sip_find_txn's result. */
enum { TXN_NONE, TXN_CALLID, TXN_CSEQ, TXN_VIA };

/* Header names in lower case, as a word of the message reads them. */
#define W_CALLID W8('c', 'a', 'l', 'l', '-', 'i', 'd', 0)
#define W_CSEQ W8('c', 's', 'e', 'q', 0, 0, 0, 0)
#define W_VIA W8('v', 'i', 'a', 0, 0, 0, 0, 0)

/* name_in_word is name_at for a name of n bytes whose word, folded, is
 * name, and w the folded word at h: every byte folded as name_at folds
 * it, and none past the message's end taken. */
static __always_inline __u64 name_in_word(struct sip_msg *m, __u64 h, __u64 w, __u64 name, __u32 n)
{
	if (h + n > m->len || (w & BYTES(n)) != name)
		return 0;
	__u64 j = h + n;
	return sip_skip_sp(m, &j) == ':' ? j + 1 : 0;
}

/* txn_header_at returns the kind of the header line at h << 16 | the
 * offset of its value, or 0 for another header. The names are matched
 * a word at a time: a byte at a time, through its bounds checks, this was
 * a tenth of a rejected INVITE's cost. The last bytes of a frame, where
 * no word fits, are matched a byte at a time. */
static __always_inline __u64 txn_header_at(struct sip_msg *m, __u64 h)
{
	__u64 v, w;

	if (h > SIP_SCAN_MAX)
		return 0;
	if (!sip_load_word(m, m->off + h, &w)) {
		if ((v = name_at(m, h, "call-id", 7)) || (v = name_at(m, h, "i", 1)))
			return TXN_CALLID << 16 | v;
		if ((v = name_at(m, h, "cseq", 4)))
			return TXN_CSEQ << 16 | v;
		if ((v = name_at(m, h, "via", 3)) || (v = name_at(m, h, "v", 1)))
			return TXN_VIA << 16 | v;
		return 0;
	}
	w |= FOLD(8);
	if ((v = name_in_word(m, h, w, W_CALLID, 7)) || (v = name_in_word(m, h, w, 'i', 1)))
		return TXN_CALLID << 16 | v;
	if ((v = name_in_word(m, h, w, W_CSEQ, 4)))
		return TXN_CSEQ << 16 | v;
	if ((v = name_in_word(m, h, w, W_VIA, 3)) || (v = name_in_word(m, h, w, 'v', 1)))
		return TXN_VIA << 16 | v;
	return 0;
}

/* txn_complete reports whether found has all three slots. */
static __always_inline int txn_complete(__u64 found)
{
	return (found & 0xffff) && (found & 0xffff0000) && (found & 0xffff00000000);
}

/*
 * txn_note notes the header line at h in found, sip_find_txn's result: the
 * offset of its value goes in the slot of its kind unless that slot is
 * taken. A global function, one call a line, whose result the verifier
 * knows nothing of: the walks that carry found stay one state a line.
 */
__noinline __u64 txn_note(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 h, __u64 found)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (txn_complete(found))
		return found;
	__u64 k = txn_header_at(&m, h);
	__u64 kind = (k >> 16) & 3;
	if (kind == TXN_NONE)
		return found;
	__u64 shift = (kind - 1) * 16;
	if (!((found >> shift) & 0xffff))
		found |= (k & 0xffff) << shift;
	return found;
}

/*
 * sip_find_txn_from goes on with a walk for sip_find_txn that has noted
 * the lines before line in found and stopped at the header line whose
 * value (or start) is at off (at packs line << 16 | off: a BPF function
 * has five arguments): it walks the lines after it, To headers skipped,
 * until all three slots are taken or the bounds of sip_next_line and
 * SIP_MAX_LINES end it.
 */
__noinline __u64 sip_find_txn_from(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 at, __u64 found)
{
	__u64 off = at & 0xffff, line = at >> 16;

	if (off > SIP_SCAN_MAX + SIP_TO_MAX)
		return found;
	for (int i = 0; i < SIP_MAX_LINES; i++) {
		if (line + i >= SIP_MAX_LINES || txn_complete(found))
			break;
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r < 0)
			break;
		off = r & 0xffff;
		if (r & SIP_TXN_LINE)
			found = txn_note(ctx, moff, mlen, off, found);
	}
	return found;
}

/*
 * sip_find_txn returns the value offsets of the first Call-ID, CSeq and
 * Via headers, 16 bits each from the lowest: a slot is 0 for a header not
 * found within the bounds. To headers are skipped, as sip_find_callid
 * skips them. The classifier's walk has most often found them already
 * (sip_index.h).
 */
__noinline __u64 sip_find_txn(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	__u64 found = sip_index_found(moff, mlen);
	if (found != SIP_INDEX_MISS)
		return found;
	return sip_find_txn_from(ctx, moff, mlen, 0, 0);
}

/* cseq_fold folds the first word of a CSeq number and what follows it (w2)
 * into what a transaction takes of it: never 0, and even (no HASH_CUT). */
static __always_inline __u64 cseq_fold(__u64 w1, __u64 w2)
{
	__u64 h = ((w1 ^ (w2 * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL) & ~HASH_CUT;
	return h ? h : 2;
}

/* cseq_end marks the bytes of w that end a CSeq number: a blank or a line's
 * end; the lowest marked is exact. */
static __always_inline __u64 cseq_end(__u64 w)
{
	return word_has(w, ' ' * WORD_ONES) | word_has(w, '\t' * WORD_ONES) | word_has(w, WORD_CRS) |
	       word_has(w, WORD_NEWLINES);
}

/*
 * sip_cseq_number is what a transaction takes of the CSeq value at s: its
 * number (blanks skipped; its bytes up to a blank or the line's end, at
 * most ten), not its method, so that a CANCEL names the transaction of the
 * INVITE it cancels (RFC 3261 §9.1). Even and never 0; HASH_CUT for a value
 * with no number or a longer one. A word at a time, two at most; a byte at
 * a time only near the message's end.
 */
__noinline __u64 sip_cseq_number(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 s)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 w1 = 0, w2 = 0;
	__u32 k;

	if (s > SIP_SCAN_MAX + 16)
		return HASH_CUT;
	sip_skip_sp(&m, &s);
	if (s + 16 <= mlen && sip_load_word(&m, m.off + s, &w1) && sip_load_word(&m, m.off + s + 8, &w2)) {
		__u64 stop = cseq_end(w1);
		if (stop) {
			k = first_byte(stop);
			return k ? cseq_fold(w1 & ((1ULL << (8 * k)) - 1), 0) : HASH_CUT;
		}
		stop = cseq_end(w2);
		if (!stop || first_byte(stop) > 2)
			return HASH_CUT; /* more than ten bytes */
		k = first_byte(stop);
		return cseq_fold(w1, w2 & ((1ULL << (8 * k)) - 1));
	}
	w1 = w2 = 0;
	for (k = 0; k < 11; k++) {
		int c = sip_byte(&m, s + k);
		if (c < 0 || is_sp(c) || c == '\r' || c == '\n')
			break;
		if (k < 8)
			w1 |= (__u64)c << (8 * k);
		else
			w2 |= (__u64)c << (8 * (k - 8));
	}
	return k && k <= 10 ? cseq_fold(w1, w2) : HASH_CUT;
}

/* txn_mix folds one more header's hash into a transaction's. */
static __always_inline __u64 txn_mix(__u64 h, __u64 v)
{
	return (h ^ v) * FNV_PRIME;
}

/*
 * sip_txn_hash hashes a request's transaction: *callid gets the Call-ID's
 * hash (0 without one), and the result is the transaction's (0 unless all
 * three headers were found, so that a request without them is never taken
 * for a retransmission).
 */
static __always_inline __u64 sip_txn_hash(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 *callid)
{
	__u64 at = sip_index_found(moff, mlen);
	if (at == SIP_INDEX_MISS) /* as sip_find_txn would, without its call */
		at = sip_find_txn_from(ctx, moff, mlen, 0, 0);
	__u64 c = at & 0xffff, s = (at >> 16) & 0xffff, v = (at >> 32) & 0xffff;

	/* A refused INVITE hashed its Call-ID alone first (invite.h). */
	if (!sip_index_callid(moff, mlen, callid))
		*callid = c ? sip_hash_value(ctx, moff, mlen, c) : 0;
	if (!c || !s || !v)
		return 0;
	__u64 cseq = sip_cseq_number(ctx, moff, mlen, s), via = sip_hash_value(ctx, moff, mlen, v);
	/* A header cut at SIP_HASH_MAX names no transaction: copies that
	 * differ past it are other transactions to the server. */
	if ((*callid | cseq | via) & HASH_CUT)
		return 0;
	__u64 h = txn_mix(FNV_OFFSET, *callid);
	h = txn_mix(h, cseq);
	h = txn_mix(h, via);
	return h ? h : 1;
}

/*
 * sip_txn is sip_txn_hash, kept in this CPU's index for the next asking of
 * the same message: a refused INVITE of a Call-ID recent.h has seen asks
 * twice (whether it is a copy, and to remember it refused), and need not
 * hash three headers twice. A new call's asks once: its first question
 * needs the Call-ID alone (sip_callid).
 */
static __always_inline __u64 sip_txn(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 *callid)
{
	__u64 kept;
	if (sip_index_txn(moff, mlen, callid, &kept))
		return kept;
	kept = sip_txn_hash(ctx, moff, mlen, callid);
	sip_index_keep_txn(moff, mlen, *callid, kept);
	return kept;
}
