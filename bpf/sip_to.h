/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The To header's value: does it carry a tag? Quoted display names and
 * <URI>s are skipped, since a ";tag=" inside them is not the dialog's tag.
 */
#pragma once

#include "sip_msg.h"

/* What sip_tag_at makes of a header parameter, in the low bits of its
 * result; a tag's value offset is above them (TAG_VALUE_SHIFT). */
enum { TAG_NONE, TAG_SET, TAG_EMPTY };
#define TAG_KIND 3
#define TAG_VALUE_SHIFT 8

/*
 * sip_tag_at reads the header parameter starting at q as the receivers
 * do, and where they disagree, as the one that finds no tag. Kamailio
 * takes the name in any case, blanks around it and the '=', and a value
 * quoted or not; sipgo only ";tag=" spelt so. So: TAG_NONE for another
 * parameter; TAG_SET, with the value's offset << TAG_VALUE_SHIFT, for
 * ";tag=" and a value; TAG_EMPTY for any other tag, which one of them
 * takes for none: "tag", "tag=", "tag=""", an unclosed quote, another
 * spelling, more blanks than the filter skips.
 */
__noinline int sip_tag_at(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 q)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 start = q;
	int c = sip_skip_sp(&m, &q);
	if (is_sp(c))
		return TAG_EMPTY; /* past the blanks skipped: perhaps a tag to Kamailio */
	int exact = q == start && c == 't' && sip_byte(&m, q + 1) == 'a' && sip_byte(&m, q + 2) == 'g' &&
		    sip_byte(&m, q + 3) == '=';
	if ((c | 0x20) != 't' || (sip_byte(&m, q + 1) | 0x20) != 'a' ||
	    (sip_byte(&m, q + 2) | 0x20) != 'g')
		return TAG_NONE;
	q += 3;
	c = sip_byte(&m, q);
	if (c == '=' || is_sp(c)) {
		c = sip_skip_sp(&m, &q);
	} else if (c >= 0 && c != ';' && c != ',' && c != '\r' && c != '\n' && c != '>') {
		return TAG_NONE; /* another name: "tagx" */
	}
	if (c != '=')
		return TAG_EMPTY;
	q++;
	c = sip_skip_sp(&m, &q);
	int set;
	if (c == '"') {
		c = sip_byte(&m, q + 1);
		set = c >= 0 && c != '"' && c != '\r' && c != '\n';
	} else {
		set = c >= 0 && !is_sp(c) && c != '\r' && c != '\n' && c != ';' && c != ',';
	}
	if (!set || !exact || q > SIP_READ_LIMIT)
		return TAG_EMPTY;
	return (int)(q << TAG_VALUE_SHIFT) | TAG_SET;
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
 * sip_to_tagged: a quote, angle bracket, semicolon, backslash, newline or
 * '=' (one in a tag's value takes the tag away).
 * It returns end when there is none. A word at a time; the last partial
 * word is the one that ends the message, shifted as in sip_next_line.
 * With semi, the bytes looked for are only a semicolon and a newline
 * (sip_next_semi).
 */
static __always_inline long next_special(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 off, __u64 end, int semi)
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
		__u64 z = has_byte(w, ';') | has_byte(w, '\n');
		if (!semi)
			z |= has_byte(w, '"') | has_byte(w, '<') | has_byte(w, '>') | has_byte(w, '\\') | has_byte(w, '=');
		if (end - off < 8)
			z &= (1ULL << ((end - off) * 8)) - 1; /* bytes from end on do not count */
		if (z)
			return off + first_byte(z);
		off += 8;
	}
	return end;
}

__noinline long sip_next_special(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 off, __u64 end)
{
	return next_special(ctx, moff, mlen, off, end, 0);
}

/* sip_next_semi is sip_next_special for a semicolon or a newline only:
 * a To value with no semicolon before the newline that ends its header
 * has no parameter, and no tag, whatever else it holds. */
__noinline long sip_next_semi(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 off, __u64 end)
{
	return next_special(ctx, moff, mlen, off, end, 1);
}

/* What sip_to_step carries and returns beside the state (bits 0-1) and
 * the next offset (bits 8 and up). */
#define TO_STATE 0x03
#define TO_INTAG 0x04  /* in the value of the tag parameter that set TO_TAGGED */
#define TO_TAGGED 0x10 /* the last tag parameter so far has a value */
#define TO_DONE 0x20   /* the value ended */

/*
 * sip_to_step reads the To value from at >> 8, in state at & TO_STATE, up to
 * and including the next byte that can change the state, and returns the
 * offset after it << 8 with the new state; TO_TAGGED says whether the last
 * tag parameter read so far has a value (Kamailio keeps the last), and
 * TO_DONE that the value ended. A global function: sip_to_tagged's loop
 * then carries one unknown scalar from step to step, and the verifier
 * walks it once, not once for each state the value may be in.
 */
__noinline __u64 sip_to_step(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 at, __u64 end)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 off = at >> 8, tagged = at & TO_TAGGED, intag = at & TO_INTAG;
	__u32 state = at & TO_STATE;

	/* Cut short at SIP_TO_MAX, the value may go on with a tag parameter
	 * that takes the tag away: no tag, then. */
	if (end < mlen)
		tagged = 0;
	if (off >= end || end > SIP_READ_LIMIT)
		return TO_DONE | tagged;
	__u64 p = off;
	if (state != TO_ESCAPED) {
		p = sip_next_special(ctx, moff, mlen, off, end);
		if (p >= end)
			return TO_DONE | tagged;
	}
	tagged = at & TO_TAGGED;
	int c = sip_byte(&m, p);
	if (c < 0)
		return TO_DONE;
	off = p + 1;
	if (c == '\n') /* a folded line goes on; any other ends the value */
		return is_sp(sip_byte(&m, off)) ? off << 8 | tagged | intag | state : TO_DONE | tagged;
	/* sipgo splits a parameter at its last '=': one in the tag's value
	 * leaves it no tag. */
	if (c == '=' && intag)
		tagged = intag = 0;
	switch (state) {
	case TO_PLAIN:
		if (c == '"') {
			state = TO_QUOTED;
		} else if (c == '<') {
			state = TO_ANGLE;
		} else if (c == ';') {
			int t = sip_tag_at(ctx, moff, mlen, off);
			intag = 0;
			if ((t & TAG_KIND) == TAG_SET) {
				tagged = TO_TAGGED;
				intag = TO_INTAG;
				off = (__u32)t >> TAG_VALUE_SHIFT;
			} else if ((t & TAG_KIND) == TAG_EMPTY) {
				tagged = 0;
			}
		}
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
	return off << 8 | tagged | intag | state;
}

/*
 * sip_to_tagged reports whether the To header value starting at v has a tag
 * as Kamailio reads it: the last tag parameter outside the quoted display
 * name and the <URI>, with a value. Folded lines continue the header.
 * Only the bytes sip_next_special finds can change the state, so each
 * step jumps from one to the next; an escaped byte is taken as it comes.
 * A value longer than SIP_TO_MAX is read no further: what lies past it
 * cannot make the request a new dialog's, and it is charged as one. So
 * is a value that takes more than SIP_TO_STEPS steps (a step a quote,
 * bracket, semicolon, backslash, '=' or newline, an escaped byte, and
 * the end): a real To has a dozen at most, and a value made of ";t"
 * parameters took 126, the dearest part of the worst request the bounds
 * let through.
 */
__noinline int sip_to_tagged(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 v)
{
	if (moff > SIP_MSG_OFF_MAX || v > SIP_SCAN_MAX + SIP_WS_MAX + 8)
		return 0;
	__u64 end = v + SIP_TO_MAX < mlen ? v + SIP_TO_MAX : mlen;
	__u64 r = v << 8 | TO_PLAIN;

	/* The untagged To of a new call, the one a flood sends, is read in
	 * one call and no step. */
	__u64 p = sip_next_semi(ctx, moff, mlen, v, end);
	if (p >= end)
		return 0;
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	if (sip_byte(&m, p) == '\n' && !is_sp(sip_byte(&m, p + 1)))
		return 0;
	for (int i = 0; i < SIP_TO_STEPS; i++) {
		r = sip_to_step(ctx, moff, mlen, r, end);
		if (r & TO_DONE)
			return !!(r & TO_TAGGED);
	}
	return 0;
}
