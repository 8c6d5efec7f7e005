/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SIP over UDP: which request is it, and does it open a new dialog? It does
 * unless every To header carries a tag (RFC 3261 §12.2): this file finds the
 * To headers, sip_to.h reads their values, sip_msg.h holds the bounds.
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
 * header. When there is no further line before SIP_SCAN_MAX it returns
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

/* What sip_to_headers found. */
#define SIP_DIALOG 1  /* To headers, every one tagged, and every header seen */
#define SIP_TO_MANY 2 /* more than one To header */

/*
 * sip_to_headers reads every To header of the request: it claims a dialog
 * only when there is one, every To header carries a tag, and the search saw
 * every header (the blank line, or the end of a whole datagram). Servers
 * disagree on which of several To headers counts (Kamailio reads the
 * first, sipgo and PJSIP the last), so the reading that charges wins: one
 * untagged To makes it a new dialog. The request line is skipped: headers
 * start after a newline.
 */
__noinline int sip_to_headers(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u32 fragmented)
{
	__u64 off = 0;
	/* seen (SIP_DIALOG) and many are only ever or-ed in and returned,
	 * never branched on: the verifier need not tell their values apart,
	 * so each line costs one state, not four. */
	__u32 seen = 0, many = 0;

	for (int line = 0; line <= SIP_MAX_LINES; line++) {
		if (line == SIP_MAX_LINES)
			return many;
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r == SIP_NO_TO || (r == SIP_END && !fragmented))
			return seen | many;
		if (r < 0)
			return many;
		/* Either way off is the same 16 bits to the verifier, so
		 * the two paths meet as one state at the next line. */
		off = r & 0xffff;
		if (r & SIP_TO_FOUND) {
			many |= seen << 1; /* SIP_TO_MANY */
			barrier_var(many);
			if (!sip_to_tagged(ctx, moff, mlen, off))
				return many;
			seen = SIP_DIALOG;
		}
	}
	return many;
}

/* sip_response reads the status code of a response: three digits and a
 * space after "SIP/2.0 ". Anything else is just other traffic. */
static __always_inline int sip_response(struct sip_msg *m)
{
	/* The offset moved past leading CRLFs: bound the very register that
	 * is added to the pointer, which older verifiers (6.1) need. */
	__u64 off = m->off;
	barrier_var(off);
	if (m->len < 12 || off > SIP_MSG_OFF_MAX)
		return RESULT(CAC_KIND_OTHER, 0);
	__u8 *p = m->data + off + 8;
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

/* Bytes of a word that fold to lower case: letters of a method. */
#define FOLD(n) (0x2020202020202020ULL >> (64 - 8 * (n)))
#define BYTES(n) (~0ULL >> (64 - 8 * (n)))
/* Eight bytes as a little-endian load reads them. */
#define W8(a, b, c, d, e, f, g, h)                                                                 \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 |  \
	 (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)
/* Method names in lower case, as a word of the message reads them. */
#define W_INVITE W8('i', 'n', 'v', 'i', 't', 'e', ' ', 0)
#define W_OPTIONS W8('o', 'p', 't', 'i', 'o', 'n', 's', ' ')
#define W_REGISTER W8('r', 'e', 'g', 'i', 's', 't', 'e', 'r')
#define W_SIP20 W8('s', 'i', 'p', '/', '2', '.', '0', ' ')

/* sip_leading_crlf counts the CR and LF bytes that open a message, at most
 * SIP_CRLF_MAX. A global function: its loop is verified once. */
__noinline __u32 sip_leading_crlf(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u32 skip = 0;

	for (int i = 0; i < SIP_CRLF_MAX; i++) {
		int c = sip_byte(&m, skip);
		if (c != '\r' && c != '\n')
			break;
		skip++;
	}
	return skip;
}

/* is_token reports whether c may start a method (RFC 3261 §25.1 token). */
static __always_inline int is_token(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '!' || c == '%' || c == '*' || c == '_' || c == '+' ||
	       c == '`' || c == '\'' || c == '~';
}

/*
 * classify_sip reads a SIP message as the most lenient server behind the
 * filter would: leading CRLFs skipped, the method in any letter case, any
 * method a request. A request the filter cannot read to the end within its
 * bounds is charged, never waved through.
 */
static __always_inline int classify_sip(CAC_CTX *ctx, struct frame *f, struct udp_msg *u)
{
	struct sip_msg m = {.data = f->data, .data_end = f->data_end, .off = u->off, .len = u->len};
	int class, odd = 0;

	__u32 skip = sip_leading_crlf(ctx, m.off, m.len);
	if (skip == u->len && !u->fragmented)
		return RESULT(CAC_KIND_OTHER, 0); /* a keep-alive */
	int c = sip_byte(&m, skip);
	if (c == '\r' || c == '\n')
		return RESULT(CAC_KIND_MALFORMED, 0); /* more CRLFs than the bound */
	/* A first fragment too short to show the method hides the request in
	 * fragments that cannot be classified: that is no SIP peer's doing. */
	if (u->len - skip < 8)
		return u->fragmented ? RESULT(CAC_KIND_MALFORMED, 0) : RESULT(CAC_KIND_OTHER, 0);
	if (skip)
		odd = RESULT_ODD;
	m.off += skip;
	m.len -= skip;
	f->msgoff = m.off;
	f->msglen = m.len > 0xffff ? 0xffff : m.len;
	f->skip = skip;

	__u64 w;
	if (!sip_load_word(&m, m.off, &w))
		return RESULT(CAC_KIND_MALFORMED, 0); /* cannot be: 8 bytes are there */
	if (((w | FOLD(6)) & BYTES(7)) == (W_INVITE & BYTES(7))) {
		class = CAC_CLASS_SIP_INVITE;
		if ((w & BYTES(6)) != (W_INVITE & BYTES(6) & ~FOLD(6)))
			odd = RESULT_ODD;
	} else if ((w | FOLD(7)) == W_OPTIONS) {
		class = CAC_CLASS_SIP_OPTIONS;
		if (w != (W_OPTIONS & ~FOLD(7)))
			odd = RESULT_ODD;
	} else if ((w | FOLD(8)) == W_REGISTER && sip_byte(&m, 8) == ' ') {
		/* Never in a dialog (RFC 3261 §10.2): a To tag changes nothing
		 * for a registrar, so it changes nothing here. */
		if (w != (W_REGISTER & ~FOLD(8)))
			odd = RESULT_ODD;
		return RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_REGISTER) | odd;
	} else if ((w | FOLD(3)) == W_SIP20) {
		return sip_response(&m); /* an agent's may take it out of service */
	} else if (is_token(c)) {
		class = CAC_CLASS_SIP_OTHER;
	} else {
		return RESULT(CAC_KIND_OTHER, 0); /* not text a SIP server reads */
	}

	int to = sip_to_headers(ctx, m.off, m.len, u->fragmented);
	if (to & SIP_TO_MANY)
		odd = RESULT_ODD;
	if (to & SIP_DIALOG)
		return RESULT(CAC_KIND_INDIALOG, 0) | odd;
	return RESULT(CAC_KIND_CLASS, class) | odd;
}
