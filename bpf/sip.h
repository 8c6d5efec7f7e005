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
#define SIP_BLANK (-3)     /* the blank line that ends the headers */

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

/*
 * sip_load_word loads the 8 bytes at offset start of the frame. The barrier
 * keeps clang from folding the offset into the pointer in an order the
 * verifier cannot bound.
 */
static __always_inline int sip_load_word(struct sip_msg *m, __u64 start, __u64 *w)
{
	barrier_var(start);
	if (start > SIP_MSG_OFF_MAX + SIP_READ_LIMIT)
		return 0;
	__u64 *p = m->data + start;
	if ((void *)(p + 1) > m->data_end)
		return 0;
	*w = *p;
	return 1;
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
 * spaces allowed before the colon), SIP_BLANK at the blank line that ends
 * the headers, and 0 for any other header.
 */
static __always_inline long sip_header_at(struct sip_msg *m, __u64 h)
{
	int c = sip_byte(m, h);
	if (c == '\r' || c == '\n')
		return SIP_BLANK;
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
	if (nl >= SIP_SCAN_MAX)
		return SIP_GAVE_UP;
	if (nl + 1 >= m->len)
		return SIP_TO_ABSENT;
	if (nl + 1 >= SIP_SCAN_MAX)
		return SIP_GAVE_UP;
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
		if (off >= mlen)
			return mlen > SIP_SCAN_MAX ? SIP_GAVE_UP : SIP_TO_ABSENT;
		if (off >= SIP_SCAN_MAX)
			return SIP_GAVE_UP;
		if (sip_byte(&m, off) == '\n')
			return sip_line_after(&m, off);
		off++;
	}
	return SIP_GAVE_UP;
}

/*
 * sip_next_line finds the line after the first newline at or past off and
 * returns what sip_header_at makes of it: SIP_TO_FOUND | the To value's
 * offset, SIP_BLANK, or the line's offset for any other header. It returns
 * SIP_TO_ABSENT when the message ends first, and SIP_GAVE_UP when that
 * newline, or the line after it, is at or past SIP_SCAN_MAX. Whole words
 * first; off only grows by 8 there, one verifier state a step.
 */
__noinline long sip_next_line(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 off)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	/* Callers pass off below SIP_SCAN_MAX. */
	if (moff > SIP_MSG_OFF_MAX || off > SIP_SCAN_MAX)
		return SIP_GAVE_UP;

	for (int i = 0; i < SIP_SCAN_MAX / 8 + 1; i++) {
		if (off >= SIP_SCAN_MAX || off + 8 > mlen)
			break;
		__u64 w;
		if (!sip_load_word(&m, moff + off, &w))
			return SIP_GAVE_UP;
		__u64 x = w ^ WORD_NEWLINES;
		__u64 zero = (x - WORD_ONES) & ~x & WORD_HIGHS;
		if (zero)
			return sip_line_after(&m, off + first_byte(zero));
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
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r == SIP_TO_ABSENT || r == SIP_GAVE_UP)
			return r;
		if (line == SIP_MAX_LINES)
			return SIP_GAVE_UP;
		if (r == SIP_BLANK)
			return SIP_TO_ABSENT;
		if (r < 0)
			return SIP_GAVE_UP; /* no other codes */
		if (r & SIP_TO_FOUND)
			return r & 0xffff;
		off = r;
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

#define WORD_OF(c) ((c) * WORD_ONES)

/* has_byte returns the high bit of each byte of w equal to c; the lowest
 * bit set is exact, higher ones may be false after a match. */
static __always_inline __u64 has_byte(__u64 w, __u64 c)
{
	__u64 x = w ^ WORD_OF(c);
	return (x - WORD_ONES) & ~x & WORD_HIGHS;
}

/*
 * sip_next_special returns the offset of the first byte at or past off and
 * before end (end <= mlen) that can change what the To value means to
 * sip_to_tagged: a quote, angle bracket, semicolon, backslash or newline.
 * It returns end when there is none. A word at a time; the last partial
 * word is the one that ends the message, shifted as in sip_next_line.
 */
__noinline long sip_next_special(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 off,
				 __u64 end)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (moff > SIP_MSG_OFF_MAX || moff < 8 || end > mlen || end > SIP_READ_LIMIT)
		return end;
	barrier_var(off);

	for (int i = 0; i < SIP_TO_MAX / 8 + 2; i++) {
		if (off >= end)
			return end;
		__u64 back = 0;
		if (off + 8 > mlen) {
			back = off + 8 - mlen; /* 1 to 7 bytes before off */
			if (back > 7)
				return end; /* cannot happen: off < end <= mlen */
		}
		__u64 w;
		if (!sip_load_word(&m, moff + off - back, &w))
			return end;
		w >>= back * 8;
		__u64 z = has_byte(w, '"') | has_byte(w, '<') | has_byte(w, '>') |
			  has_byte(w, ';') | has_byte(w, '\\') | has_byte(w, '\n');
		if (end - off < 8)
			z &= (1ULL << ((end - off) * 8)) - 1; /* bytes from end on do not count */
		if (z)
			return off + first_byte(z);
		off += 8;
	}
	return end;
}

/*
 * sip_to_tagged reports whether the To header value starting at v has a tag
 * parameter. Quoted display names and <URI>s are skipped, since a ";tag="
 * inside them is not the dialog's tag; folded lines continue the header.
 * Only the bytes sip_next_special finds can change the state, so it jumps
 * from one to the next; an escaped byte is taken as it comes.
 */
__noinline int sip_to_tagged(struct xdp_md *ctx, __u64 moff, __u64 mlen, __u64 v)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	int state = TO_PLAIN;

	if (moff > SIP_MSG_OFF_MAX || v > SIP_SCAN_MAX + SIP_WS_MAX + 8)
		return 0;
	__u64 end = v + SIP_TO_MAX < mlen ? v + SIP_TO_MAX : mlen;
	__u64 off = v;

	for (int i = 0; i < SIP_TO_MAX + 1; i++) {
		if (off >= end)
			return 0;
		__u64 p = off;
		if (state != TO_ESCAPED) {
			p = sip_next_special(ctx, moff, mlen, off, end);
			if (p >= end)
				return 0;
		}
		int c = sip_byte(&m, p);
		if (c < 0)
			return 0;
		off = p + 1;
		if (c == '\n') {
			if (!is_sp(sip_byte(&m, off)))
				return 0;
			continue;
		}
		switch (state) {
		case TO_PLAIN:
			if (c == '"')
				state = TO_QUOTED;
			else if (c == '<')
				state = TO_ANGLE;
			else if (c == ';' && sip_tag_at(ctx, moff, mlen, off))
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
