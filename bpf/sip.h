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
			found = txn_note(ctx, moff, mlen, off, found);
			continue;
		}
		many |= seen << 1; /* SIP_TO_MANY */
		barrier_var(many);
		if (!sip_to_tagged(ctx, moff, mlen, off)) {
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

	sip_index_clear(); /* of the message this CPU read before */

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

	int to = sip_to_headers(ctx, m.off, m.len, u->fragmented, class == CAC_CLASS_SIP_INVITE);
	if (to & SIP_TO_MANY)
		odd = RESULT_ODD;
	if (to & SIP_DIALOG)
		return RESULT(CAC_KIND_INDIALOG, 0) | odd;
	return RESULT(CAC_KIND_CLASS, class) | odd;
}
