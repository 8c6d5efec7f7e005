/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The header lines of a SIP message, one after another: sip_next_line
 * finds the next line and says whether it is a To header, one that may
 * name a transaction, the blank line that ends the headers, or a bound of
 * the search (sip_msg.h). The walks
 * of sip.h, sip_hdr.h, sip_txn.h and sip_user.h are made of it.
 */
#pragma once

#include "sip_msg.h"

/*
 * The searches below are global functions: the verifier checks each once,
 * with unknown arguments, instead of once per path of its caller. That is
 * what keeps a bounded scan of 2 KiB within its budget on every kernel.
 * Each one checks its own arguments again for the same reason.
 */

/* Marks the offset of a To header's value in sip_next_line's result, and
 * a To header whose value is not read: more than SIP_WS_MAX blanks before
 * its colon. */
#define SIP_TO_FOUND (1L << 32)
#define SIP_TO_WIDE (1L << 33)
/* Marks a header line whose name starts as a transaction's headers do
 * (Call-ID, CSeq, Via, or compact i or v): only such a line is worth
 * txn_note's look (sip_txn.h). */
#define SIP_TXN_LINE (1L << 34)

/*
 * sip_header_at looks at the header line starting at h. It returns the
 * offset just past the colon of a To header ("To" or compact "t", any case,
 * spaces allowed before the colon), SIP_TO_WIDE | an offset for one with
 * more blanks there than the filter skips, SIP_NO_TO at the blank line that
 * ends the headers, SIP_TXN_LINE for a header whose name starts with c, i
 * or v, and 0 for any other header.
 */
static __always_inline long sip_header_at(struct sip_msg *m, __u64 h)
{
	int c = sip_byte(m, h);
	if (c == '\r' || c == '\n')
		return SIP_NO_TO;
	if ((c | 0x20) != 't')
		return (c | 0x20) == 'c' || (c | 0x20) == 'i' || (c | 0x20) == 'v' ? SIP_TXN_LINE : 0;
	__u64 j = h + 1;
	c = sip_byte(m, j);
	if ((c | 0x20) == 'o')
		j++;
	c = sip_skip_sp(m, &j);
	/* More blanks than the bound before a colon: a To to Kamailio, which
	 * takes any run of them, that the filter does not read: no tag. */
	if (is_sp(c))
		return SIP_TO_WIDE | j;
	return c == ':' ? (long)(j + 1) : 0;
}

/* sip_ended is what a search that found no further header line says: the
 * whole message was within the bounds, or it was not. */
static __always_inline long sip_ended(__u64 mlen)
{
	return mlen <= SIP_SCAN_MAX ? SIP_END : SIP_BOUND;
}

/* sip_line_after returns the result of sip_next_line for a newline at nl. */
static __always_inline long sip_line_after(struct sip_msg *m, __u64 nl)
{
	if (nl + 1 >= m->len)
		return sip_ended(m->len);
	if (nl + 1 >= SIP_SCAN_MAX)
		return SIP_BOUND;
	long v = sip_header_at(m, nl + 1);
	if (v < 0)
		return v;
	if (v == SIP_TXN_LINE)
		return SIP_TXN_LINE | (long)(nl + 1);
	return v ? SIP_TO_FOUND | v : (long)(nl + 1);
}

/* sip_next_line_tail is sip_next_line for the last bytes, fewer than 8 before
 * the message ends or past SIP_SCAN_MAX: one byte at a time. */
__noinline long sip_next_line_tail(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	for (int i = 0; i < 9; i++) {
		if (off >= mlen)
			return sip_ended(mlen);
		if (off >= SIP_SCAN_MAX)
			return SIP_BOUND;
		if (sip_byte(&m, off) == '\n')
			return sip_line_after(&m, off);
		off++;
	}
	return SIP_BOUND;
}

/*
 * sip_next_line finds the line after the first newline at or past off and
 * returns what sip_header_at makes of it: SIP_TO_FOUND | the To value's
 * offset, SIP_NO_TO at the blank line, or the line's offset for any other
 * header, with SIP_TXN_LINE for one that may name a transaction. When there is no further line before SIP_SCAN_MAX it returns
 * SIP_END if the whole message is shorter than that, SIP_BOUND if not: so
 * the answer does not depend on where the words fall. Whole words first; off
 * only grows by 8 there, one verifier state a step.
 */
__noinline long sip_next_line(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	/* Callers pass off below SIP_SCAN_MAX + SIP_TO_MAX. */
	if (moff > SIP_MSG_OFF_MAX || off > SIP_SCAN_MAX + SIP_TO_MAX)
		return SIP_BOUND;

	for (int i = 0; i < SIP_SCAN_MAX / 8 + 1; i++) {
		if (off >= SIP_SCAN_MAX || off + 8 > mlen)
			break;
		__u64 w;
		if (!sip_load_word(&m, moff + off, &w))
			return SIP_BOUND;
		__u64 x = w ^ WORD_NEWLINES;
		__u64 zero = (x - WORD_ONES) & ~x & WORD_HIGHS;
		if (zero)
			return sip_line_after(&m, off + first_byte(zero));
		off += 8;
	}
	return sip_next_line_tail(ctx, moff, mlen, off);
}

