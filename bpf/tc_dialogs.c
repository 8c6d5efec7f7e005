//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * tc_dialogs: what the daemons behind the filter send, on egress of the
 * interfaces the XDP program watches. Two things are learnt there:
 *
 * - the dialogs the SIP server opens itself (docs/design.md, "Dialogs the
 *   server opens"): an INVITE out of dialog over UDP, to or from a watched
 *   SIP port, puts the hash of its Call-ID in the dialog table xdp_cac
 *   reads (dialog.h), so that the requests of that dialog coming back pass
 *   uncharged. The INVITE is read as the XDP side reads a request (sip.h)
 *   and its Call-ID hashed as sip_hdr.h hashes it; the Go twin is
 *   internal/model/admission/egress.go.
 * - the L2TP tunnels the LNS sets up, whose ICRQs the filter may answer
 *   (docs/design.md "Refusing an ICRQ"): the LNS's SCCRP makes a tunnel's
 *   entries, and the Nr of its later control messages is put up by the
 *   ICRQs answered (l2tp_lns.h; the Go twin is internal/model/l2tp).
 *
 * - the INVITEs toward session agents (docs/design.md, "Egress
 *   admission"): one toward an agent out of service, or over its
 *   connection limit, is dropped and handed up for the daemon to answer
 *   on the agent's behalf (egress.h; the Go twin is
 *   internal/model/admission/egress.go).
 *
 * Every other frame goes on, to what comes after on the interface, and
 * nothing in it changes but a translated Nr.
 */
#include "uapi.h"
#include "bpf_helpers.h"

/* The SIP readers read an skb here, and a datagram from a SIP port counts
 * as one to it (parse.h, sip_msg.h). Of the maps, the program has those it
 * shares with the XDP program (maps.h). */
#define CAC_EGRESS
#define CAC_CTX struct __sk_buff
#define UDP_KIND(udp) udp_kind_egress(udp)

#include "cac.h"
#include "parse.h"
#include "sip.h"
#include "sip_hdr.h"
#include "clock.h"
#include "dialog.h"
#include "l2tp_lns.h"
#include "egress.h"
#include "session_note.h"
#include "where.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* How far into a frame the SIP readers may read: a message starts at most
 * SIP_MSG_OFF_MAX in, and no read goes past SIP_READ_LIMIT of it and a
 * word. What lies further is never looked at, so never pulled. */
#define EGRESS_PULL (SIP_MSG_OFF_MAX + SIP_READ_LIMIT + 8)

/* egress_parse finds a UDP datagram of a watched SIP port in the part of
 * the skb that is linear, with the lengths checked against the whole. */
static __always_inline int egress_parse(struct __sk_buff *skb, struct frame *f, struct udp_msg *msg)
{
	f->data = (void *)(long)skb->data;
	f->data_end = (void *)(long)skb->data_end;
	f->len = skb->len;
	__u32 l3off = 0;
	__u16 proto = parse_l2(f, &l3off);
	if (proto == ETH_P_IP)
		return parse_ipv4(f, l3off, msg);
	if (proto == ETH_P_IPV6)
		return parse_ipv6(f, l3off, msg);
	return CAC_KIND_UNWATCHED;
}

/* egress_frame learns the dialog of a frame going out, if it opens one,
 * and judges an INVITE toward a session agent (egress.h): it returns
 * TC_ACT_SHOT for one refused, else TC_ACT_UNSPEC. */
static __always_inline int egress_frame(struct __sk_buff *skb)
{
	struct frame f = {};
	struct udp_msg msg = {};

	/* The stack and the drivers put headers in the linear part; a
	 * payload may be in pages. So the headers are read where they are,
	 * and only a datagram of a SIP port has the rest pulled in, as far as
	 * the readers go. A frame whose headers are not linear is not
	 * learnt: its dialog's requests are then held like a stranger's,
	 * never waved through. */
	if (egress_parse(skb, &f, &msg) != UDP_MSG_READY)
		return TC_ACT_UNSPEC;
	if (msg.kind == CAC_PORT_L2TP) {
		l2tp_from_lns(skb, where_pack(f.l3off, 0, f.family, 0, msg.fragmented, msg.off, msg.len));
		return TC_ACT_UNSPEC;
	}
	__u32 want = skb->len < EGRESS_PULL ? skb->len : EGRESS_PULL;
	if (f.data_end - f.data < want) {
		if (bpf_skb_pull_data(skb, want) < 0)
			return TC_ACT_UNSPEC;
		if (egress_parse(skb, &f, &msg) != UDP_MSG_READY)
			return TC_ACT_UNSPEC;
	}
	int result = classify_sip(skb, &f, &msg) & ~RESULT_ODD;
	__u64 where = where_pack(f.l3off, f.udpoff, f.family, 0, 0, f.msgoff, f.msglen);
	if (result == RESULT(CAC_KIND_CLASS, CAC_CLASS_SIP_INVITE))
		return egress_invite(skb, where, now_ns());
	/* The server's answers and in-dialog requests (its BYE) of a dialog
	 * that holds sessions go up (sessions.h). */
	int kind = RESULT_KIND(result);
	if ((kind == CAC_KIND_INDIALOG || (kind == CAC_KIND_OTHER && RESULT_CODE(result) >= 100)) &&
	    (egress_policy() & POLICY_CAPACITY))
		session_note(skb, where, 1);
	if (kind == CAC_KIND_INDIALOG) /* an ACK of a non-2xx answer has its To tag */
		return egress_ack(skb, where, now_ns());
	if (kind == CAC_KIND_OTHER && RESULT_CODE(result) >= 200)
		egress_answer(skb, where, RESULT_CODE(result));
	return TC_ACT_UNSPEC;
}

/*
 * A frame goes on with TC_ACT_UNSPEC, which tcx calls TCX_NEXT: the
 * program decides nothing else, so what comes after it on the interface (another
 * tool's tcx program or tc filter) still runs and has its say, and with
 * nothing after it the frame is sent. TC_ACT_OK would end the chain here,
 * and a program attached after this one would never see the frame.
 */
SEC("tc")
int tc_dialogs(struct __sk_buff *skb)
{
	return egress_frame(skb);
}
