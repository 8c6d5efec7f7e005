/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Authentication rules (docs/design.md, "Authentication rules"): the users
 * a SIP request names, and the account a CLI or called-number rule gives
 * it. The CLI is the user of the P-Asserted-Identity URI when that header
 * is there, else of the From URI; the called number is the user of the
 * Request-URI. internal/model/classify/user.go is the same in Go.
 *
 * user_account runs before admit_call, from verdict: admit_call's call
 * chain is at the 512 bytes of stack ("The verifier's budget"), so the
 * header walk cannot be under it. Its answer goes through the user_scratch
 * map, and admission reads it there.
 */
#pragma once

#include "sip.h"
#include "sip_hdr.h"

/* Which header user_header_at found. */
enum { USER_HDR_NONE, USER_HDR_FROM, USER_HDR_PAI };

/* user_header_at returns the kind of the header line at h << 16 | the
 * offset of its value, or 0 for another header. A global function, one
 * call a line. */
__noinline __u64 user_header_at(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 h)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 v;

	if (h > SIP_SCAN_MAX)
		return 0;
	if ((v = name_at(&m, h, "from", 4)) || (v = name_at(&m, h, "f", 1)))
		return (__u64)USER_HDR_FROM << 16 | v;
	if ((v = name_at(&m, h, "p-asserted-identity", 19)))
		return (__u64)USER_HDR_PAI << 16 | v;
	return 0;
}

/*
 * sip_find_users returns the value offsets of the first From header (the
 * low 16 bits) and of the first P-Asserted-Identity (the next 16), 0 for
 * one not found among the header lines sip_next_line walks. To headers
 * are skipped, as sip_find_txn skips them.
 */
__noinline __u64 sip_find_users(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	__u64 off = 0, found = 0;

	for (int line = 0; line < SIP_MAX_LINES; line++) {
		long r = sip_next_line(ctx, moff, mlen, off);
		if (r < 0)
			break;
		off = r & 0xffff;
		if (r & SIP_TO_FOUND)
			continue;
		__u64 h = user_header_at(ctx, moff, mlen, off);
		__u64 kind = (h >> 16) & 3;
		if (kind == USER_HDR_NONE || kind > USER_HDR_PAI)
			continue;
		__u64 shift = (kind - 1) * 16;
		if (!((found >> shift) & 0xffff))
			found |= (h & 0xffff) << shift;
	}
	return found;
}

/* The states of value_uri's walk over a header value, and what
 * value_step returns besides the next offset (bits 8 and up). */
enum { VU_NAME, VU_QUOTED, VU_ESCAPED };
#define VU_FOUND 0x10 /* a '<': the URI starts at the offset */
#define VU_END 0x20   /* the line or the message ended */

/*
 * value_step reads the byte at at >> 8 of a From or P-Asserted-Identity
 * value, in state at & 0xff, and returns the next offset << 8 with the new
 * state, or with VU_FOUND after a '<' outside quotes, or VU_END. A global
 * function, as sip_to_step is: value_uri's loop carries one unknown scalar
 * from byte to byte, and the verifier walks it once for every state.
 */
__noinline __u64 value_step(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 at)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);
	__u64 off = at >> 8;
	__u32 st = at & 0xff;

	if (off > SIP_SCAN_MAX + 256 || st > VU_ESCAPED)
		return VU_END;
	int c = sip_byte(&m, off);
	if (c < 0 || c == '\r' || c == '\n')
		return VU_END;
	if (st == VU_NAME && c == '<')
		return (off + 1) << 8 | VU_FOUND;
	if (st == VU_ESCAPED)
		st = VU_QUOTED;
	else if (st == VU_QUOTED && c == '\\')
		st = VU_ESCAPED;
	else if (st == VU_QUOTED && c == '"')
		st = VU_NAME;
	return (off + 1) << 8 | st;
}

/*
 * value_uri returns the offset of the URI in the From or P-Asserted-
 * Identity value at v, or 0: spaces skipped (at most SIP_WS_MAX), a quoted
 * display name skipped to its closing quote (backslash escapes honoured),
 * and the URI after a '<' that follows (after an unquoted display name, if
 * any); with no '<' the value is the URI. The '<' is looked for within
 * CAC_URI_SCAN_MAX bytes of the value's first byte (or of the byte after
 * the opening quote), on its line.
 */
__noinline __u64 value_uri(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 v)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (v > SIP_SCAN_MAX + 64)
		return 0;
	int c = sip_skip_sp(&m, &v);
	__u64 first = v;
	__u64 r = v << 8 | VU_NAME;
	if (c == '"') {
		first = 0; /* a quoted name and no '<': no URI */
		r = (v + 1) << 8 | VU_QUOTED;
	}
	for (int i = 0; i < CAC_URI_SCAN_MAX; i++) {
		r = value_step(ctx, moff, mlen, r);
		if (r & VU_FOUND)
			return r >> 8;
		if (r & VU_END)
			break;
	}
	return first;
}

/* uri_scheme reads the scheme at u: the offset of what follows its colon
 * << 1 | 1 for tel, or 0 for a scheme that is neither sip, sips nor tel. */
static __always_inline __u64 uri_scheme(struct sip_msg *m, __u64 u)
{
	int a = sip_byte(m, u) | 0x20, b = sip_byte(m, u + 1) | 0x20, c = sip_byte(m, u + 2) | 0x20;
	int d = sip_byte(m, u + 3);
	if (a == 's' && b == 'i' && c == 'p') {
		if (d == ':')
			return (u + 4) << 1;
		if ((d | 0x20) == 's' && sip_byte(m, u + 4) == ':')
			return (u + 5) << 1;
		return 0;
	}
	if (a == 't' && b == 'e' && c == 'l' && d == ':')
		return (u + 4) << 1 | 1;
	return 0;
}

/*
 * uri_user copies the user of the URI at u into k (zero padded, its
 * first CAC_USER_MAX bytes after k->data[0]) and returns its length, 0 for
 * none. A sip or sips user ends at '@', and there is none if '>', a space,
 * a tab, CR, LF or the end of the message comes first, or CAC_URI_SCAN_MAX
 * bytes pass; a tel user ends at ';', '>', a space, a tab, CR, LF or the
 * end of the message, and there is none past CAC_URI_SCAN_MAX bytes.
 */
__noinline int uri_user(CAC_CTX *ctx, __u64 moff, __u64 mlen, __u64 u, struct cac_user_key *k)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	if (!k)
		return 0;
#pragma unroll
	for (int i = 0; i < CAC_USER_MAX; i++)
		k->data[1 + i] = 0;
	if (u > SIP_SCAN_MAX + 128)
		return 0;
	__u64 s = uri_scheme(&m, u);
	if (!s)
		return 0;
	int tel = s & 1;
	__u64 start = s >> 1;
	for (int i = 0; i < CAC_URI_SCAN_MAX; i++) {
		int c = sip_byte(&m, start + i);
		if (c < 0 || c == '>' || is_sp(c) || c == '\r' || c == '\n' || (tel && c == ';'))
			return tel ? (i < CAC_USER_MAX ? i : CAC_USER_MAX) : 0;
		if (!tel && c == '@')
			return i < CAC_USER_MAX ? i : CAC_USER_MAX;
		if (i < CAC_USER_MAX)
			k->data[1 + i] = c;
	}
	return 0;
}

/* request_uri returns the offset of the Request-URI: past the method and
 * the one space after it, within CAC_URI_SCAN_MAX bytes; 0 without. */
__noinline __u64 request_uri(CAC_CTX *ctx, __u64 moff, __u64 mlen)
{
	struct sip_msg m = sip_msg_of(ctx, moff, mlen);

	for (int i = 1; i < CAC_URI_SCAN_MAX; i++) {
		int c = sip_byte(&m, i);
		if (c < 0 || c == '\r' || c == '\n')
			return 0;
		if (c == ' ')
			return i + 1;
	}
	return 0;
}

/* user_lookup looks up the user in s->key for a rule of kind in the trie of
 * slot, and keeps what it finds in s. */
static __always_inline int user_lookup(struct cac_user_scratch *s, __u32 kind, __u32 slot)
{
	s->key.prefixlen = 8 * (1 + CAC_USER_MAX);
	s->key.data[0] = kind;
	struct cac_account *a = slot ? bpf_map_lookup_elem(&user_accounts1, &s->key)
				     : bpf_map_lookup_elem(&user_accounts0, &s->key);
	if (!a)
		return 0;
	s->account = *a;
	s->kind = kind;
	return 1;
}

/*
 * user_account finds the account the authentication rules give a SIP
 * request out of dialog: a CLI rule first, then a called-number rule. It
 * returns 1 when user_scratch holds one. where is verdict's frame word;
 * policy the policy word's slot and user rule bits: a kind of rule no
 * account has is not looked for, and without a CLI rule the headers are
 * not walked. A global function: the header walk is verified once, and
 * its frames are not on admit_call's chain.
 */
__noinline int user_account(struct xdp_md *ctx, __u64 where, __u32 policy)
{
	__u32 zero = 0, slot = policy & POLICY_SLOT;
	struct cac_user_scratch *s = bpf_map_lookup_elem(&user_scratch, &zero);
	if (!s)
		return 0;
	s->kind = CAC_RULE_SOURCE;
	__u64 moff = where_msgoff(where), mlen = where_msglen(where);

	if (policy & POLICY_CLI_RULES) {
		__u64 at = sip_find_users(ctx, moff, mlen);
		__u64 v = (at >> 16) & 0xffff; /* P-Asserted-Identity, when there is one */
		if (!v)
			v = at & 0xffff;
		__u64 u = v ? value_uri(ctx, moff, mlen, v) : 0;
		if (u && uri_user(ctx, moff, mlen, u, &s->key) && user_lookup(s, CAC_RULE_CLI, slot))
			return 1;
	}
	if (policy & POLICY_CALLED_RULES) {
		__u64 u = request_uri(ctx, moff, mlen);
		if (u && uri_user(ctx, moff, mlen, u, &s->key) && user_lookup(s, CAC_RULE_CALLED, slot))
			return 1;
	}
	return 0;
}
