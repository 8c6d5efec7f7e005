/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The classifier: which frames are the first sign of life of a session.
 * docs/design.md "Classes" says why; internal/model/classify is the same logic in Go
 * and the oracle the differential tests hold this file to.
 */
#pragma once

#include "parse.h"
#include "sip.h"
#include "l2tp.h"
#include "access.h"

#define PPPOE_VER_TYPE 0x11
#define PPPOE_CODE_PADI 0x09
#define PPPOE_CODE_PADR 0x19

struct pppoe_hdr {
	__u8 ver_type;
	__u8 code;
	__be16 session;
	__be16 length;
};

static __always_inline int classify_pppoe(struct frame *f, __u32 off)
{
	struct pppoe_hdr *ph = f->data + off;
	if ((void *)(ph + 1) > f->data_end)
		return RESULT(CAC_KIND_MALFORMED, 0);
	if (ph->ver_type != PPPOE_VER_TYPE ||
	    off + sizeof(*ph) + bpf_ntohs(ph->length) > f->len)
		return RESULT(CAC_KIND_MALFORMED, 0);

	int class;
	if (ph->code == PPPOE_CODE_PADI)
		class = CAC_CLASS_PPPOE_PADI;
	else if (ph->code == PPPOE_CODE_PADR)
		class = CAC_CLASS_PPPOE_PADR;
	else
		return RESULT(CAC_KIND_OTHER, 0); /* PADO, PADS, PADT */

	/* RFC 2516 gives a PADI or PADR session ID 0, but pppoe-server and
	 * accel-ppp answer one with any: classified all the same, and
	 * counted as odd (docs/design.md "Classes"). */
	return RESULT(CAC_KIND_CLASS, class) | (ph->session != 0 ? RESULT_ODD : 0);
}

static __always_inline int classify_l2tp(struct frame *f, struct udp_msg *msg)
{
	/* A first fragment must at least show the Message Type AVP. */
	if (msg->fragmented && msg->len < sizeof(struct l2tp_ctrl))
		return RESULT(CAC_KIND_MALFORMED, 0);
	if (msg->len < sizeof(__be16))
		return RESULT(CAC_KIND_MALFORMED, 0);
	__be16 *flagsp = f->data + msg->off;
	if ((void *)(flagsp + 1) > f->data_end)
		return RESULT(CAC_KIND_MALFORMED, 0);
	__u16 flags = bpf_ntohs(*flagsp);
	__u16 ver = flags & L2TP_VER;

	/* L2F shares port 1701 (version 1); data messages open nothing. */
	if ((ver != 2 && ver != 3) || !(flags & L2TP_T))
		return RESULT(CAC_KIND_OTHER, 0);
	if (!(flags & L2TP_L) || !(flags & L2TP_S) || (ver == 2 && (flags & L2TP_O)))
		return RESULT(CAC_KIND_MALFORMED, 0);
	if (msg->len < L2TP_CTRL_HDR)
		return RESULT(CAC_KIND_MALFORMED, 0);

	struct l2tp_ctrl *c = f->data + msg->off;
	if ((void *)c + L2TP_CTRL_HDR > f->data_end)
		return RESULT(CAC_KIND_MALFORMED, 0);
	/* In a first fragment the message goes on past what is here. */
	__u32 length = bpf_ntohs(c->length);
	if (length < L2TP_CTRL_HDR || (length > msg->len && !msg->fragmented))
		return RESULT(CAC_KIND_MALFORMED, 0);
	/* Where the message is, for a tunnel's translation (l2tp_lac.h). */
	f->msgoff = msg->off;
	f->msglen = length;
	if (length == L2TP_CTRL_HDR)
		return RESULT(CAC_KIND_OTHER, 0) | RESULT_L2TP; /* ZLB acknowledgement */
	if (length < sizeof(*c) || (void *)(c + 1) > f->data_end)
		return RESULT(CAC_KIND_MALFORMED, 0);

	__u16 avp = bpf_ntohs(c->avp_flags_len);
	if ((avp & L2TP_AVP_H) || (avp & L2TP_AVP_LEN) != 8 || c->avp_vendor != 0 ||
	    c->avp_type != 0)
		return RESULT(CAC_KIND_MALFORMED, 0);

	__u16 type = bpf_ntohs(c->msg_type);
	if (type == L2TP_MSG_SCCRQ)
		return RESULT(CAC_KIND_CLASS, CAC_CLASS_L2TP_SCCRQ) | RESULT_L2TP;
	if (type == L2TP_MSG_ICRQ)
		return RESULT(CAC_KIND_CLASS, CAC_CLASS_L2TP_ICRQ) | RESULT_L2TP;
	return RESULT(CAC_KIND_OTHER, 0) | RESULT_L2TP;
}

/* denied_result is the result of a frame the access lists or the deny
 * table deny (access.h), by how; the class goes above it, plus one, where
 * the frame shows it before any parse (PPPoE, sip-connect). */
#define DENIED_RESULT(how, class_plus_one) (RESULT(CAC_KIND_DENIED, how) | ((class_plus_one) << 16))

/* access_of is what access control says of a watched frame's source: a
 * lookup only when the policy holds a list or auto-deny. */
static __always_inline int access_of(struct xdp_md *ctx, struct frame *f)
{
	__u32 policy = policy_word();
	if (!(policy & (POLICY_ACCESS_LISTS | POLICY_AUTO_DENY)))
		return CAC_ACCESS_NONE;
	return access_check(ctx, where_pack(f->l3off, 0, f->family, 0, 0, 0, 0), policy);
}

/* classify returns RESULT(kind, class) for one frame. */
static __always_inline int classify(struct xdp_md *ctx, struct frame *f)
{
	__u32 l3off = 0;
	__u16 proto = parse_l2(f, &l3off);

	if (proto == ETH_P_PPP_DISC) {
		int how = access_of(ctx, f);
		if (how != CAC_ACCESS_NONE) {
			struct pppoe_hdr *ph = f->data + l3off;
			__u32 known = 0;
			if ((void *)(ph + 1) <= f->data_end)
				known = ph->code == PPPOE_CODE_PADI   ? CAC_CLASS_PPPOE_PADI + 1
					: ph->code == PPPOE_CODE_PADR ? CAC_CLASS_PPPOE_PADR + 1
								      : 0;
			return DENIED_RESULT(how, known);
		}
		return classify_pppoe(f, l3off);
	}
	if (proto == ETH_P_TOO_DEEP)
		return RESULT(CAC_KIND_MALFORMED, 0);

	struct udp_msg msg = {};
	int kind;
	if (proto == ETH_P_IP)
		kind = parse_ipv4(f, l3off, &msg);
	else if (proto == ETH_P_IPV6)
		kind = parse_ipv6(f, l3off, &msg);
	else
		return RESULT(CAC_KIND_UNWATCHED, 0);
	/* A watched frame's source is judged right after the header that
	 * names it: a denied one costs no parse of its message. */
	if (kind == UDP_MSG_READY || (kind == CAC_KIND_MALFORMED && f->family)) {
		int how = access_of(ctx, f);
		if (how != CAC_ACCESS_NONE)
			return DENIED_RESULT(how, msg.kind == CAC_PORT_SIP_TCP ? CAC_CLASS_SIP_CONNECT + 1 : 0);
	}
	if (kind != UDP_MSG_READY)
		return RESULT(kind, 0);

	if (msg.kind == CAC_PORT_SIP_TCP)
		return RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_CONNECT);
	if (msg.kind == CAC_PORT_L2TP)
		return classify_l2tp(f, &msg);
	return classify_sip(ctx, f, &msg);
}
