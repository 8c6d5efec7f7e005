/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SIP over UDP: is this INVITE or OPTIONS the start of a new dialog? A
 * request inside a dialog carries a tag on its To header (RFC 3261 §12.2).
 *
 * The search is bounded so that it verifies on every supported kernel and
 * costs little: the To header must start within SIP_SCAN_MAX bytes and
 * SIP_MAX_LINES lines, and its tag within SIP_TO_MAX bytes of the colon.
 * A message that runs out of these budgets is treated as a new dialog, so
 * a long message is charged, never waved through.
 */
#pragma once

#include "bpf_helpers.h"
#include "parse.h"

#define SIP_SCAN_MAX 2048
#define SIP_MAX_LINES 64
#define SIP_TO_MAX 256
#define SIP_WS_MAX 4
/* No valid read goes past this offset; it only bounds offsets for the verifier. */
#define SIP_READ_LIMIT (SIP_SCAN_MAX + SIP_TO_MAX + 64)

#define SIP_TO_ABSENT (-1) /* headers ended without a To header */
#define SIP_GAVE_UP (-2)   /* a budget ran out first */

#define WORD_ONES 0x0101010101010101ULL
#define WORD_HIGHS 0x8080808080808080ULL
#define WORD_NEWLINES 0x0a0a0a0a0a0a0a0aULL

/* No message starts later in a frame than this (IPv6 with four maximal
 * extension headers ends near 8300); it bounds offsets for the verifier. */
#define SIP_MSG_OFF_MAX 0x3fff

/* A SIP message inside the frame. */
struct sip_msg {
	void *data;
	void *data_end;
	__u64 off; /* offset of the message in the frame */
	__u64 len;
};

static __always_inline struct sip_msg sip_msg_of(struct xdp_md *ctx, __u64 off, __u64 len)
{
	struct sip_msg m = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.off = off,
		.len = len,
	};
	return m;
}

/* sip_byte returns the byte at off in the message, or -1 past its end. */
static __always_inline int sip_byte(struct sip_msg *m, __u64 off)
{
	if (off >= m->len)
		return -1;
	/* The barrier makes clang bound the very register it adds to the
	 * pointer, which is what the verifier checks. */
	__u64 pos = m->off + off;
	barrier_var(pos);
	if (pos > SIP_MSG_OFF_MAX + SIP_READ_LIMIT)
		return -1;
	__u8 *p = m->data + pos;
	if ((void *)(p + 1) > m->data_end)
		return -1;
	return *p;
}

static __always_inline int is_sp(int c)
{
	return c == ' ' || c == '\t';
}

/* sip_skip_sp skips at most SIP_WS_MAX spaces or tabs from *off. */
static __always_inline int sip_skip_sp(struct sip_msg *m, __u64 *off)
{
	int c = sip_byte(m, *off);
#pragma unroll
	for (int i = 0; i < SIP_WS_MAX && is_sp(c); i++) {
		(*off)++;
		c = sip_byte(m, *off);
	}
	return c;
}

/* first_byte returns the index of the lowest byte whose top bit is set in m. */
static __always_inline __u32 first_byte(__u64 m)
{
	__u64 bit = m & -m;
	return ((bit >> 7) * 0x0001020304050607ULL) >> 56;
}

/*
 * The searches below are global functions: the verifier checks each once,
 * with unknown arguments, instead of once per path of its caller. That is
 * what keeps a bounded scan of 2 KiB within its budget on every kernel.
 * Each one checks its own arguments again for the same reason.
 */

/*
 * sip_header_at looks at the header line starting at h. It returns the
 * offset just past the colon of a To header ("To" or compact "t", any case,
 * spaces allowed before the colon), SIP_TO_ABSENT at the blank line that
 * ends the headers, and 0 for any other header.
 */
__noinline long sip_header_at(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 h)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	int c = sip_byte(&m, h);
	if (c == '\r' || c == '\n')
		return SIP_TO_ABSENT;
	if ((c | 0x20) != 't')
		return 0;
	__u64 j = h + 1;
	c = sip_byte(&m, j);
	if ((c | 0x20) == 'o')
		j++;
	c = sip_skip_sp(&m, &j);
	return c == ':' ? (long)(j + 1) : 0;
}

/* sip_line_after returns the result of sip_next_line for a newline at nl. */
static __always_inline long sip_line_after(__u64 nl, __u64 mlen)
{
	if (nl >= SIP_SCAN_MAX)
		return SIP_GAVE_UP;
	if (nl + 1 >= mlen)
		return SIP_TO_ABSENT;
	if (nl + 1 >= SIP_SCAN_MAX)
		return SIP_GAVE_UP;
	return nl + 1;
}

/* sip_next_line_tail is sip_next_line for the last bytes, fewer than 8 before
 * the message ends or past SIP_SCAN_MAX: one byte at a time. */
__noinline long sip_next_line_tail(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	for (int i = 0; i < 9; i++) {
		if (off >= mlen)
			return mlen > SIP_SCAN_MAX ? SIP_GAVE_UP : SIP_TO_ABSENT;
		if (off >= SIP_SCAN_MAX)
			return SIP_GAVE_UP;
		if (sip_byte(&m, off) == '\n')
			return sip_line_after(off, mlen);
		off++;
	}
	return SIP_GAVE_UP;
}

/*
 * sip_next_line returns the offset of the line after the first newline at
 * or past off, SIP_TO_ABSENT when the message ends first, or SIP_GAVE_UP
 * when that newline, or the line after it, is at or past SIP_SCAN_MAX.
 * Whole words first; off only grows by 8 there, one verifier state a step.
 */
__noinline long sip_next_line(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	/* Callers pass off below SIP_SCAN_MAX. */
	if (moff > SIP_MSG_OFF_MAX || off > SIP_SCAN_MAX)
		return SIP_GAVE_UP;

	for (int i = 0; i < SIP_SCAN_MAX / 8 + 1; i++) {
		if (off >= SIP_SCAN_MAX || off + 8 > mlen)
			break;
		/* The barrier keeps clang from folding the offset into the
		 * pointer in an order the verifier cannot bound. */
		__u64 start = moff + off;
		barrier_var(start);
		if (start > SIP_MSG_OFF_MAX + SIP_SCAN_MAX)
			return SIP_GAVE_UP;
		__u64 *w = data + start;
		if ((void *)(w + 1) > data_end)
			return SIP_GAVE_UP;
		__u64 x = *w ^ WORD_NEWLINES;
		__u64 zero = (x - WORD_ONES) & ~x & WORD_HIGHS;
		if (zero)
			return sip_line_after(off + first_byte(zero), mlen);
		off += 8;
	}
	return sip_next_line_tail(ctx, moff, mlen, off);
}

/*
 * sip_find_to returns the offset of the To header's value, SIP_TO_ABSENT or
 * SIP_GAVE_UP. The request line is skipped: headers start after a newline.
 */
__noinline long sip_find_to(struct xdp_md *ctx, __u64 moff, __u64 mlen)
{
	__u64 off = 0;

	for (int line = 0; line <= SIP_MAX_LINES; line++) {
		long h = sip_next_line(ctx, moff, mlen, off);
		if (h < 0)
			return h;
		if (line == SIP_MAX_LINES)
			return SIP_GAVE_UP;
		long v = sip_header_at(ctx, moff, mlen, h);
		if (v != 0)
			return v;
		off = h;
	}
	return SIP_GAVE_UP;
}

/*
 * sip_tag_at reports whether a header parameter starting at q is a
 * non-empty tag: spaces, "tag" in any case, spaces, '=', spaces, a value.
 */
__noinline int sip_tag_at(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 q)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	int c = sip_skip_sp(&m, &q);
	if ((c | 0x20) != 't' || (sip_byte(&m, q + 1) | 0x20) != 'a' ||
	    (sip_byte(&m, q + 2) | 0x20) != 'g')
		return 0;
	q += 3;
	if (sip_skip_sp(&m, &q) != '=')
		return 0;
	q++;
	c = sip_skip_sp(&m, &q);
	return c >= 0 && !is_sp(c) && c != '\r' && c != '\n' && c != ';' && c != ',';
}

enum { TO_PLAIN, TO_QUOTED, TO_ESCAPED, TO_ANGLE };

/*
 * sip_to_tagged reports whether the To header value starting at v has a tag
 * parameter. Quoted display names and <URI>s are skipped, since a ";tag="
 * inside them is not the dialog's tag; folded lines continue the header.
 */
__noinline int sip_to_tagged(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 v)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	int state = TO_PLAIN;

	if (moff > SIP_MSG_OFF_MAX || v > SIP_SCAN_MAX + SIP_WS_MAX + 8)
		return 0;
	for (int i = 0; i < SIP_TO_MAX; i++) {
		__u64 off = v + i;
		int c = sip_byte(&m, off);
		if (c < 0)
			return 0;
		if (c == '\n') {
			if (!is_sp(sip_byte(&m, off + 1)))
				return 0;
			continue;
		}
		switch (state) {
		case TO_PLAIN:
			if (c == '"')
				state = TO_QUOTED;
			else if (c == '<')
				state = TO_ANGLE;
			else if (c == ';' && sip_tag_at(ctx, moff, mlen, off + 1))
				return 1;
			break;
		case TO_QUOTED:
			if (c == '\\')
				state = TO_ESCAPED;
			else if (c == '"')
				state = TO_PLAIN;
			break;
		case TO_ESCAPED:
			state = TO_QUOTED;
			break;
		default: /* TO_ANGLE */
			if (c == '>')
				state = TO_PLAIN;
			break;
		}
	}
	return 0;
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

static __always_inline int classify_sip(struct xdp_md *ctx, struct frame *f, struct udp_msg *u)
{
	struct sip_msg m = {.data = f->data, .data_end = f->data_end, .off = u->off, .len = u->len};
	int class;
	/* Methods are case-sensitive (RFC 3261 §7.1). */
	if (sip_starts_with(&m, "INVITE ", 7))
		class = CAC_CLASS_SIP_INVITE;
	else if (sip_starts_with(&m, "OPTIONS ", 8))
		class = CAC_CLASS_SIP_OPTIONS;
	else
		return RESULT(CAC_KIND_OTHER, 0); /* responses, other methods, keep-alives */

	long v = sip_find_to(ctx, m.off, m.len);
	if (v == SIP_TO_ABSENT)
		return RESULT(CAC_KIND_MALFORMED, 0); /* To is mandatory */
	if (v > 0 && sip_to_tagged(ctx, m.off, m.len, v))
		return RESULT(CAC_KIND_INDIALOG, 0);
	return RESULT(CAC_KIND_CLASS, class);
}
