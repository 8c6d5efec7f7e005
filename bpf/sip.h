/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SIP over UDP: which request is it, and does it open a new dialog? It does
 * unless every To header carries a tag (RFC 3261 §12.2): this file finds the
 * To headers, sip_to.h reads their values, sip_msg.h holds the bounds.
 */
#pragma once

#include "sip_msg.h"
#include "sip_line.h"
#include "sip_to.h"
#include "sip_txn.h"

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
 *
 * On its way it notes the first Call-ID, CSeq and Via for sip_find_txn
 * (sip_index.h). Stopped by an untagged To, it goes on for them when txn
 * asks, as for an INVITE; a walk that stops there without them leaves no
 * index, and whoever needs it walks.
 */
__noinline int sip_to_headers(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u32 fragmented, __u32 txn)
{
	__u64 off = 0, found = 0;
	/* seen (SIP_DIALOG) and many are only ever or-ed in and returned,
	 * never branched on: the verifier need not tell their values apart,
	 * so each line costs one state, not four. found is what a global
	 * function returned, likewise. */
	__u32 seen = 0, many = 0;

	for (int line = 0; line <= SIP_MAX_LINES; line++) {
		if (line == SIP_MAX_LINES)
			return sip_indexed(moff, mlen, found, many);
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r == SIP_NO_TO || (r == SIP_END && !fragmented))
			return sip_indexed(moff, mlen, found, seen | many);
		if (r < 0)
			return sip_indexed(moff, mlen, found, many);
		/* Either way off is the same 16 bits to the verifier, so
		 * the two paths meet as one state at the next line. */
		off = r & 0xffff;
		if (!(r & SIP_TO_FOUND)) {
			if (r & SIP_TXN_LINE)
				found = txn_note(ctx, moff, mlen, off, found);
			continue;
		}
		many |= seen << 1; /* SIP_TO_MANY */
		barrier_var(many);
		if ((r & SIP_TO_WIDE) || !sip_to_tagged(ctx, moff, mlen, off)) {
			if (!txn)
				return many;
			found = sip_find_txn_from(ctx, moff, mlen, (__u64)(line + 1) << 16 | off, found);
			return sip_indexed(moff, mlen, found, many);
		}
		seen = SIP_DIALOG;
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

/* Method names in lower case, as a word of the message reads them. */
#define W_INVITE W8('i', 'n', 'v', 'i', 't', 'e', ' ', 0)
#define W_OPTIONS W8('o', 'p', 't', 'i', 'o', 'n', 's', ' ')
#define W_REGISTER W8('r', 'e', 'g', 'i', 's', 't', 'e', 'r')
#define W_SIP20 W8('s', 'i', 'p', '/', '2', '.', '0', ' ')
#define W_CANCEL W8('c', 'a', 'n', 'c', 'e', 'l', 0, 0)

#define WORD_LOW7 0x7f7f7f7f7f7f7f7fULL

/* zero_bytes marks, exactly, the bytes of x that are zero. */
static __always_inline __u64 zero_bytes(__u64 x)
{
	return ~(((x & WORD_LOW7) + WORD_LOW7) | x | WORD_LOW7);
}

/* lead_bytes marks, exactly, the bytes of w a receiver skips before the
 * first line: SP, HT, NUL, CR, LF. */
static __always_inline __u64 lead_bytes(__u64 w)
{
	return zero_bytes(w) | zero_bytes(w ^ (' ' * WORD_ONES)) | zero_bytes(w ^ ('\t' * WORD_ONES)) |
	       zero_bytes(w ^ ('\r' * WORD_ONES)) | zero_bytes(w ^ ('\n' * WORD_ONES));
}

static __always_inline int is_lead(int c)
{
	return c == ' ' || c == '\t' || c == 0 || c == '\r' || c == '\n';
}

/* sip_leading_tail counts on from skip, one byte at a time, over the last
 * bytes of a message, fewer than a word: a global function of its own, so
 * that the verifier walks it once and not after each word of the loop
 * that calls it. */
__noinline __u32 sip_leading_tail(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u32 skip)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (skip > SIP_LEAD_MAX)
		return SIP_LEAD_MAX;
	for (int i = 0; i < 8 && skip < SIP_LEAD_MAX; i++) {
		if (!is_lead(sip_byte(&m, skip)))
			break;
		skip++;
	}
	return skip;
}

/*
 * sip_leading counts the bytes Kamailio skips before a message's first
 * line (SP, HT, NUL, CR, LF), at most SIP_LEAD_MAX: a word at a time, then
 * the last bytes of the message one at a time. A global function: its
 * loop is verified once.
 */
__noinline __u32 sip_leading(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u32 skip = 0;

	if (moff > SIP_MSG_OFF_MAX || !is_lead(sip_byte(&m, 0)))
		return 0; /* most messages: no word to look at */
	for (int i = 0; i < SIP_LEAD_MAX / 8; i++) {
		__u64 w;
		if (skip + 8 > mlen || !sip_load_word(&m, moff + skip, &w))
			break;
		__u64 other = ~lead_bytes(w) & WORD_HIGHS;
		if (other)
			return skip + first_byte(other);
		skip += 8;
	}
	return sip_leading_tail(ctx, moff, mlen, skip);
}

/* is_token reports whether c may start a method (RFC 3261 §25.1 token). */
static __always_inline int is_token(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '!' || c == '%' || c == '*' || c == '_' || c == '+' ||
	       c == '`' || c == '\'' || c == '~';
}

#define STUN_COOKIE W8(0x21, 0x12, 0xa4, 0x42, 0, 0, 0, 0)

/*
 * sip_is_stun reports whether a whole datagram of len bytes whose first
 * word is w is a STUN message (RFC 5389 §6): the two top bits zero, the
 * magic cookie, and a length that is a multiple of four and says where the
 * datagram ends. A SIP peer sends
 * STUN to the SIP port for RFC 5626 keep-alives; no SIP receiver takes one
 * for a request.
 */
static __always_inline int sip_is_stun(__u64 w, __u64 len, int fragmented)
{
	__u32 length = (w >> 8 & 0xff00) | (w >> 24 & 0xff);
	return !fragmented && len >= 20 && (w & 0xc0) == 0 && (w >> 32) == STUN_COOKIE && (length & 3) == 0 &&
	       length + 20 == len;
}

/* What sip_first_line returns above a classifier result (bits 0-31): the
 * leading bytes skipped, and whether the result is final or the request's
 * headers are to be read for its dialog. */
#define FIRST_SKIP_SHIFT 32
#define FIRST_HEADERS (1ULL << 48)

/*
 * sip_first_line reads what a message is from its first line, after the
 * leading bytes a receiver skips: a classifier result, with the bytes
 * skipped at FIRST_SKIP_SHIFT, and FIRST_HEADERS when the request's To
 * headers must still say whether it is in a dialog. A global function:
 * the verifier walks its many small paths once, and its caller sees one
 * unknown word instead of a path for each (docs/design.md, "The
 * verifier's budget").
 */
__noinline __u64 sip_first_line(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u32 fragmented)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 odd = 0;

	if (moff > SIP_MSG_OFF_MAX || mlen > 0xffff)
		return RESULT(CAC_KIND_MALFORMED, 0);
	__u64 w = 0;
	int whole = mlen >= 8 && sip_load_word(&m, moff, &w);
	if (whole && sip_is_stun(w, mlen, fragmented))
		return RESULT(CAC_KIND_OTHER, 0);
	__u32 skip = 0;
	int c = w & 0xff;
	/* Most messages open with their method, and that first word is all
	 * there is to read before it: the rest is for those that do not. */
	if (!whole || is_lead(c)) {
		skip = sip_leading(ctx, moff, mlen);
		if (skip == mlen && !fragmented)
			return RESULT(CAC_KIND_OTHER, 0); /* a keep-alive */
		c = sip_byte(&m, skip);
		if (is_lead(c))
			return RESULT(CAC_KIND_MALFORMED, 0); /* more leading bytes than the bound */
		if (skip)
			odd = RESULT_ODD;
	}
	__u64 first = (__u64)skip << FIRST_SKIP_SHIFT;
	/* A first fragment that ends within a word of the method: the method
	 * shows only with the blank that ends it, and only INVITE is short
	 * enough to be one of the three. One that shows none hides the
	 * request in fragments that cannot be classified: malformed, as no
	 * SIP peer sends it. A whole datagram so short is no request. */
	if (mlen - skip < 8) {
		if (!fragmented)
			return RESULT(CAC_KIND_OTHER, 0);
		int end = -1;
		for (int i = 0; i < 7; i++) {
			if (skip + i >= mlen)
				break;
			if (is_sp(sip_byte(&m, skip + i))) {
				end = i;
				break;
			}
		}
		if (end <= 0)
			return RESULT(CAC_KIND_MALFORMED, 0);
		if (end == 6 && (sip_byte(&m, skip) | 0x20) == 'i' && (sip_byte(&m, skip + 1) | 0x20) == 'n' &&
		    (sip_byte(&m, skip + 2) | 0x20) == 'v' && (sip_byte(&m, skip + 3) | 0x20) == 'i' &&
		    (sip_byte(&m, skip + 4) | 0x20) == 't' && (sip_byte(&m, skip + 5) | 0x20) == 'e')
			return first | FIRST_HEADERS | RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_INVITE) | RESULT_ODD;
		if (!is_token(c))
			odd = RESULT_ODD;
		return first | FIRST_HEADERS | RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_OTHER) | odd;
	}
	m.off += skip;
	m.len -= skip;
	if (skip && !sip_load_word(&m, m.off, &w))
		return RESULT(CAC_KIND_MALFORMED, 0); /* cannot be: 8 bytes are there */
	int c6 = (w >> 48) & 0xff, c7 = w >> 56;

	/* A tab ends a method as a space does (Kamailio's token end). */
	if ((((w | FOLD(6)) & BYTES(6)) == (W_INVITE & BYTES(6))) && is_sp(c6)) {
		if ((w & BYTES(7)) != (W8('I', 'N', 'V', 'I', 'T', 'E', ' ', 0) & BYTES(7)))
			odd = RESULT_ODD;
		return first | FIRST_HEADERS | RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_INVITE) | odd;
	}
	if (((w | FOLD(7)) & BYTES(7)) == (W_OPTIONS & BYTES(7)) && is_sp(c7)) {
		if ((w & BYTES(7)) != (W_OPTIONS & ~FOLD(7) & BYTES(7)) || c7 != ' ')
			odd = RESULT_ODD;
		return first | FIRST_HEADERS | RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_OPTIONS) | odd;
	}
	int c8 = sip_byte(&m, 8);
	/* The blank that ends REGISTER is its ninth byte: a first fragment
	 * that ends before it does not show the method. */
	if ((w | FOLD(8)) == W_REGISTER && c8 < 0 && fragmented)
		return RESULT(CAC_KIND_MALFORMED, 0);
	if ((w | FOLD(8)) == W_REGISTER && is_sp(c8)) {
		/* Never in a dialog (RFC 3261 §10.2): a To tag changes nothing
		 * for a registrar, so it changes nothing here. */
		if (w != (W_REGISTER & ~FOLD(8)) || c8 != ' ')
			odd = RESULT_ODD;
		return first | RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_REGISTER) | odd;
	}
	if ((w | FOLD(3)) == W_SIP20)
		return first | (__u32)sip_response(&m); /* an agent's may take it out of service */
	/* Any other first line is a request to Kamailio, an unknown method
	 * or none it can name (answered 405, or dropped after parsing):
	 * charged as sip-other, odd unless a token starts it. A CANCEL is
	 * marked, for the INVITE it may cancel (invite.h). */
	if (!is_token(c))
		odd = RESULT_ODD;
	if (((w | FOLD(6)) & BYTES(6)) == (W_CANCEL & BYTES(6)) && is_sp(c6))
		odd |= RESULT_CANCEL;
	return first | FIRST_HEADERS | RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_OTHER) | odd;
}

/*
 * classify_sip reads a SIP message as the most lenient server behind the
 * filter would (docs/design.md, "Read as the receiver reads"): the bytes
 * Kamailio skips before the first line skipped, the method in any letter
 * case and ended by a space or a tab, and every first line that is not a
 * response a request, an unknown one sip-other. Only a STUN message and a
 * datagram of nothing but skipped bytes (a keep-alive) are no request. A
 * request the filter cannot read to the end within its bounds is charged,
 * never waved through.
 */
static __always_inline int classify_sip(CAC_CTX *ctx, struct frame *f, struct udp_msg *u)
{
	struct sip_msg m = {.data = f->data, .data_end = f->data_end, .off = u->off, .len = u->len};

	sip_index_clear(); /* of the message this CPU read before */

	__u64 first = sip_first_line(ctx, m.off, m.len, u->fragmented);
	__u32 skip = (first >> FIRST_SKIP_SHIFT) & 0xfff;
	int r = (int)(__u32)first;
	if (RESULT_KIND(r) != CAC_KIND_CLASS && RESULT_CODE(r) == 0)
		return r; /* no request, and no response an agent's state needs */
	m.off += skip;
	m.len -= skip;
	f->msgoff = m.off;
	f->msglen = m.len > 0xffff ? 0xffff : m.len;
	f->udpoff = u->off - 8;
	if (!(first & FIRST_HEADERS))
		return r;

	int class = RESULT_CLASS(r), odd = r & (RESULT_ODD | RESULT_CANCEL);
	int to = sip_to_headers(ctx, m.off, m.len, u->fragmented, class == CAC_CLASS_SIP_INVITE);
	if (to & SIP_TO_MANY)
		odd |= RESULT_ODD;
	if (to & SIP_DIALOG)
		return RESULT(CAC_KIND_INDIALOG, 0) | (odd & RESULT_ODD);
	return RESULT(CAC_KIND_CLASS, class) | odd;
}
