/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The header that names a dialog, Call-ID, found among the header lines as
 * sip.h finds To, and hashed (64-bit FNV-1a over the words of the value's
 * first line, at most SIP_HASH_MAX bytes, the low bit saying whether it
 * was cut there) for the dialog table of dialog.h.
 * internal/model/classify/dialog.go is the same in Go.
 */
#pragma once

#include "sip_msg.h"
#include "sip_line.h"
#include "sip_index.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* name_at reports whether the n bytes at h spell name (lower case) in any
 * case, and then spaces and a colon follow; it returns the offset past the
 * colon, or 0. */
static __always_inline __u64 name_at(struct sip_msg *m, __u64 h, const char *name, __u32 n)
{
#pragma unroll
	for (__u32 i = 0; i < n; i++) {
		if ((sip_byte(m, h + i) | 0x20) != name[i])
			return 0;
	}
	__u64 j = h + n;
	return sip_skip_sp(m, &j) == ':' ? j + 1 : 0;
}

/* callid_at returns the value offset of the header line at h when it is
 * Call-ID (or compact i), or 0. A global function, so that
 * sip_find_callid's loop walks one call a line, not every byte compare. */
__noinline __u64 callid_at(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 h)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (h > SIP_SCAN_MAX)
		return 0;
	__u64 v = name_at(&m, h, "call-id", 7);
	return v ? v : name_at(&m, h, "i", 1);
}

/*
 * sip_find_callid returns the offset of the value of the first Call-ID
 * header within the bounds of sip_next_line, or 0. The request line is
 * skipped: headers start after a newline. The classifier's walk has most
 * often found it already (sip_index.h).
 */
__noinline __u64 sip_find_callid(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	__u64 off = 0, found = sip_index_found(moff, mlen);

	if (found != SIP_INDEX_MISS)
		return found & 0xffff; /* sip_find_txn's Call-ID slot */

	for (int line = 0; line < SIP_MAX_LINES; line++) {
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r < 0)
			return 0;
		off = r & 0xffff;
		if (r & SIP_TO_FOUND)
			continue; /* a To header: none of these */
		__u64 v = callid_at(ctx, moff, mlen, off);
		if (v)
			return v;
	}
	return 0;
}

#define WORD_CRS 0x0d0d0d0d0d0d0d0dULL

/* word_has marks the bytes of w equal to the byte of pattern (the lowest
 * marked is exact, which is the one first_byte finds). */
static __always_inline __u64 word_has(__u64 w, __u64 pattern)
{
	__u64 x = w ^ pattern;
	return (x - WORD_ONES) & ~x & WORD_HIGHS;
}

/* hash_tail folds the last bytes of a value, fewer than a word before the
 * message or the frame ends, one at a time into h. A global function:
 * inlined at each word it could follow, it cost the verifier 200,000
 * instructions. */
__noinline __u64 hash_tail(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 at, __u64 h)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 w = 0;
	int j;

	if (at > SIP_SCAN_MAX + 16 + SIP_WS_MAX + SIP_HASH_MAX)
		return h;
	for (j = 0; j < 8; j++) {
		int c = sip_byte(&m, at + j);
		if (c < 0 || c == '\r' || c == '\n')
			break;
		w |= (__u64)c << (8 * j);
	}
	if (j)
		h = (h ^ w) * FNV_PRIME;
	return h;
}

/* The low bit of a value's hash: set when the value ran past SIP_HASH_MAX
 * bytes, so that what the hash took in is only its start. */
#define HASH_CUT 1ULL

/*
 * sip_hash_value hashes the value at v: spaces skipped, up to the end of
 * its line or SIP_HASH_MAX bytes, eight bytes at a time (FNV-1a over
 * little-endian words, the last zero-padded): a byte at a time, through
 * its bounds checks, this was most of the cost of naming a transaction.
 * The low bit says whether the value was cut at SIP_HASH_MAX (HASH_CUT):
 * two values that differ only past it hash alike, so a transaction of
 * such a value is never matched (sip_txn). Never 0, so that 0 can mean no
 * value.
 */
__noinline __u64 sip_hash_value(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 v)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 h = FNV_OFFSET, cut = HASH_CUT;

	if (v > SIP_SCAN_MAX + 16)
		return 1 | HASH_CUT;
	sip_skip_sp(&m, &v);
	for (int i = 0; i < SIP_HASH_MAX / 8; i++) {
		__u64 at = v + i * 8, w;
		if (at + 8 > m.len || !sip_load_word(&m, m.off + at, &w)) {
			h = hash_tail(ctx, moff, mlen, at, h);
			cut = 0;
			break;
		}
		__u64 stop = word_has(w, WORD_NEWLINES) | word_has(w, WORD_CRS);
		if (stop) {
			__u32 k = first_byte(stop);
			if (k)
				h = (h ^ (w & ((1ULL << (8 * k)) - 1))) * FNV_PRIME;
			cut = 0;
			break;
		}
		h = (h ^ w) * FNV_PRIME;
	}
	h = (h & ~HASH_CUT) | cut;
	return h ? h : 2;
}

/* sip_callid is the hash of a message's Call-ID, or 0 without one: the one
 * kept in this CPU's index when the message's Call-ID was hashed before. */
static __always_inline __u64 sip_callid(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	__u64 callid;
	if (sip_index_callid(moff, mlen, &callid))
		return callid;
	/* The index read here too, not only in sip_find_callid: most often
	 * it holds the offset, and the call is not made. */
	__u64 v = sip_index_found(moff, mlen);
	v = v != SIP_INDEX_MISS ? v & 0xffff : sip_find_callid(ctx, moff, mlen);
	callid = v ? sip_hash_value(ctx, moff, mlen, v) : 0;
	sip_index_keep_callid(moff, mlen, callid);
	return callid;
}
