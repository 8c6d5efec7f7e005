/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SIP over UDP: is this INVITE or OPTIONS the start of a new dialog? It is
 * unless its To header carries a tag (RFC 3261 §12.2): this file finds the
 * To header, sip_to.h reads its value, sip_msg.h holds the bounds.
 */
#pragma once

#include "sip_msg.h"
#include "sip_to.h"

/*
 * The searches below are global functions: the verifier checks each once,
 * with unknown arguments, instead of once per path of its caller. That is
 * what keeps a bounded scan of 2 KiB within its budget on every kernel.
 * Each one checks its own arguments again for the same reason.
 */

/*
 * sip_header_at looks at the header line starting at h. It returns the
 * offset just past the colon of a To header ("To" or compact "t", any case,
 * spaces allowed before the colon), SIP_NO_TO at the blank line that ends
 * the headers, and 0 for any other header.
 */
static __always_inline long sip_header_at(struct sip_msg *m, __u64 h)
{
	int c = sip_byte(m, h);
	if (c == '\r' || c == '\n')
		return SIP_NO_TO;
	if ((c | 0x20) != 't')
		return 0;
	__u64 j = h + 1;
	c = sip_byte(m, j);
	if ((c | 0x20) == 'o')
		j++;
	c = sip_skip_sp(m, &j);
	return c == ':' ? (long)(j + 1) : 0;
}

/* Marks the offset of a To header's value in sip_next_line's result. */
#define SIP_TO_FOUND (1L << 32)

/* sip_line_after returns the result of sip_next_line for a newline at nl. */
static __always_inline long sip_line_after(struct sip_msg *m, __u64 nl)
{
	if (nl + 1 >= SIP_SCAN_MAX || nl + 1 >= m->len)
		return SIP_NO_TO;
	long v = sip_header_at(m, nl + 1);
	if (v < 0)
		return v;
	return v ? SIP_TO_FOUND | v : (long)(nl + 1);
}

/* sip_next_line_tail is sip_next_line for the last bytes, fewer than 8 before
 * the message ends or past SIP_SCAN_MAX: one byte at a time. */
__noinline long sip_next_line_tail(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	for (int i = 0; i < 9; i++) {
		if (off >= mlen || off >= SIP_SCAN_MAX)
			return SIP_NO_TO;
		if (sip_byte(&m, off) == '\n')
			return sip_line_after(&m, off);
		off++;
	}
	return SIP_NO_TO;
}

/*
 * sip_next_line finds the line after the first newline at or past off and
 * returns what sip_header_at makes of it: SIP_TO_FOUND | the To value's
 * offset, SIP_NO_TO at the blank line, or the line's offset for any other
 * header. It returns SIP_NO_TO too when the message ends first, or when
 * the line starts at or past SIP_SCAN_MAX. Whole words first; off only
 * grows by 8 there, one verifier state a step.
 */
__noinline long sip_next_line(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	/* Callers pass off below SIP_SCAN_MAX. */
	if (moff > SIP_MSG_OFF_MAX || off > SIP_SCAN_MAX)
		return SIP_NO_TO;

	for (int i = 0; i < SIP_SCAN_MAX / 8 + 1; i++) {
		if (off >= SIP_SCAN_MAX || off + 8 > mlen)
			break;
		__u64 w;
		if (!sip_load_word(&m, moff + off, &w))
			return SIP_NO_TO;
		__u64 x = w ^ WORD_NEWLINES;
		__u64 zero = (x - WORD_ONES) & ~x & WORD_HIGHS;
		if (zero)
			return sip_line_after(&m, off + first_byte(zero));
		off += 8;
	}
	return sip_next_line_tail(ctx, moff, mlen, off);
}

/*
 * sip_find_to returns the offset of the To header's value, or SIP_NO_TO.
 * The request line is skipped: headers start after a newline.
 */
__noinline long sip_find_to(struct xdp_md *ctx, __u64 moff, __u64 mlen)
{
	__u64 off = 0;

	for (int line = 0; line <= SIP_MAX_LINES; line++) {
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r < 0 || line == SIP_MAX_LINES)
			return SIP_NO_TO;
		if (r & SIP_TO_FOUND)
			return r & 0xffff;
		off = r;
	}
	return SIP_NO_TO;
}

static __always_inline int sip_starts_with(struct sip_msg *m, const char *s, __u32 n)
{
	if (m->len < n || m->off > SIP_MSG_OFF_MAX)
		return 0;
	__u8 *p = m->data + m->off;
	if ((void *)p + n > m->data_end)
		return 0;
#pragma unroll
	for (__u32 i = 0; i < n; i++) {
		if (p[i] != (__u8)s[i])
			return 0;
	}
	return 1;
}

/* sip_response reads the status code of a response: three digits and a
 * space after "SIP/2.0 ". Anything else is just other traffic. */
static __always_inline int sip_response(struct sip_msg *m)
{
	if (m->len < 12 || m->off > SIP_MSG_OFF_MAX)
		return RESULT(CAC_KIND_OTHER, 0);
	__u8 *p = m->data + m->off + 8;
	if ((void *)p + 4 > m->data_end)
		return RESULT(CAC_KIND_OTHER, 0);
	__u32 code = 0;
#pragma unroll
	for (int i = 0; i < 3; i++) {
		if (p[i] < '0' || p[i] > '9')
			return RESULT(CAC_KIND_OTHER, 0);
		code = code * 10 + (p[i] - '0');
	}
	if (p[3] != ' ' || code < 100 || code > 699)
		return RESULT(CAC_KIND_OTHER, 0);
	return RESULT_SIP_RESPONSE(code);
}

static __always_inline int classify_sip(struct xdp_md *ctx, struct frame *f, struct udp_msg *u)
{
	struct sip_msg m = {.data = f->data, .data_end = f->data_end, .off = u->off, .len = u->len};
	int class;

	/* A first fragment too short to show the method hides the request in
	 * fragments that cannot be classified: that is no SIP peer's doing. */
	if (u->fragmented && u->len < sizeof("OPTIONS ") - 1)
		return RESULT(CAC_KIND_MALFORMED, 0);
	f->msgoff = u->off;
	f->msglen = u->len > 0xffff ? 0xffff : u->len;
	/* Methods are case-sensitive (RFC 3261 §7.1). */
	if (sip_starts_with(&m, "INVITE ", 7))
		class = CAC_CLASS_SIP_INVITE;
	else if (sip_starts_with(&m, "OPTIONS ", 8))
		class = CAC_CLASS_SIP_OPTIONS;
	else if (sip_starts_with(&m, "SIP/2.0 ", 8))
		return sip_response(&m); /* an agent's may take it out of service */
	else if (u->len >= 8)
		/* another method (BYE, REGISTER, ...): still a request of its
		 * sender's; a keep-alive of a few bytes is not */
		return RESULT_SIP_RESPONSE(SIP_OTHER_REQUEST);
	else
		return RESULT(CAC_KIND_OTHER, 0);

	/* Without a To header in sight (missing, odd, or in a later fragment)
	 * the request is taken for a new dialog, so it is charged. */
	long v = sip_find_to(ctx, m.off, m.len);
	if (v > 0 && sip_to_tagged(ctx, m.off, m.len, v))
		return RESULT(CAC_KIND_INDIALOG, 0);
	return RESULT(CAC_KIND_CLASS, class);
}
