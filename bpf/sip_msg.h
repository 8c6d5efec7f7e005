/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reading a SIP message inside the frame: its bounds, bytes and words.
 *
 * The search for a new dialog is bounded so that it verifies on every
 * supported kernel and costs little: the To header must start within
 * SIP_SCAN_MAX bytes and SIP_MAX_LINES header lines, and its tag within
 * SIP_TO_MAX bytes of the colon, read in SIP_TO_STEPS steps at most (a
 * step: a parameter, or a run of blanks or escaped bytes). A request
 * whose To header or tag is not found within these bounds, or not at
 * all, is taken for a new dialog: it is charged, never waved through.
 */
#pragma once

#include "bpf_helpers.h"
#include "parse.h"

/* The bounds are in shared.h. No valid read goes past this offset; it
 * only bounds offsets for the verifier. */
#define SIP_READ_LIMIT (SIP_SCAN_MAX + SIP_TO_MAX + 64)

/* How a search through the header lines ended, when it found no To header
 * on its way: at the blank line that ends the headers, at the end of the
 * message (or of a first fragment) with no blank line, or at one of the
 * bounds above. Only the first two have seen every header. */
#define SIP_NO_TO (-1)
#define SIP_END (-2)
#define SIP_BOUND (-3)

/* Leading SP, HT, NUL, CR and LF bytes are skipped before the first line,
 * as Kamailio skips them (RFC 3261 §7.5 names CRLF; an RFC 5626 keep-alive
 * is nothing else). More than SIP_LEAD_MAX, and then something, is
 * malformed. */

#define WORD_ONES 0x0101010101010101ULL
#define WORD_HIGHS 0x8080808080808080ULL
#define WORD_NEWLINES 0x0a0a0a0a0a0a0a0aULL

/* No message starts later in a frame than this (IPv6 with four maximal
 * extension headers ends near 8300); it bounds offsets for the verifier. */
#define SIP_MSG_OFF_MAX 0x3fff

/* The context the SIP readers take: an XDP program's, unless the program
 * that includes them names its own first (tc_dialogs.c reads an skb, whose
 * data and data_end are at other offsets but mean the same). The readers
 * only ever load those two. */
#ifndef CAC_CTX
#define CAC_CTX struct xdp_md
#endif

/* A SIP message inside the frame. */
struct sip_msg {
	void *data;
	void *data_end;
	__u64 off; /* offset of the message in the frame */
	__u64 len;
};

static __always_inline struct sip_msg sip_msg_of(CAC_CTX *ctx, __u64 off, __u64 len)
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

/* Bytes of a word that fold to lower case: letters of a method. */
#define FOLD(n) (0x2020202020202020ULL >> (64 - 8 * (n)))
#define BYTES(n) (~0ULL >> (64 - 8 * (n)))
/* Eight bytes as a little-endian load reads them. */
#define W8(a, b, c, d, e, f, g, h)                                                                 \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 |  \
	 (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)
