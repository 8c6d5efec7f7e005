/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The LAC's side of a translated tunnel (l2tp.h), in the XDP program: the
 * Ns of each control message the LAC sends is taken down by the ICRQs the
 * filter answered, and a refused ICRQ is turned into the ZLB that answers
 * it and sent back where it came from.
 */
#pragma once

#include "l2tp.h"
#include "clock.h"
#include "where.h"

/* What l2tp_from_lac is asked to do (op's code; a reason its argument,
 * code_pack of where.h). */
enum l2tp_op {
	L2TP_CHECK = 0,  /* an ICRQ before admission: new, or a copy? */
	L2TP_PASS = 1,   /* a message going on to the LNS */
	L2TP_REFUSE = 2, /* a new ICRQ refused: answer it */
	L2TP_AGAIN = 3,  /* a copy of a refused ICRQ: answer it again */
};

/* What L2TP_CHECK finds besides a reason (a copy of an ICRQ refused for
 * it) and ADMITTED (a copy of one passed: passed again, uncharged). */
#define L2TP_UNKNOWN (-3) /* no tunnel the filter translates */
#define L2TP_NEW (-4)     /* the LAC's next message: an ICRQ to judge */
#define L2TP_AHEAD (-5)   /* one past the next: judged, never answered */

/* The parts of a LAC's message the functions below use, at offsets the
 * verifier has checked against the frame. */
struct lac_msg {
	struct ethhdr *eth;
	struct udphdr *udp;
	struct l2tp_ctrl *c;
	void *ip;
	/* The UDP header follows the IP header at once: no IPv4 options,
	 * no IPv6 extension headers, which an answer would have to drop. */
	int answerable;
};

/* lac_translate writes a message's Ns as the LNS counts: the LAC's less
 * what the filter answered, with the UDP checksum updated to match. */
static __always_inline void lac_translate(struct lac_msg *m, struct cac_l2tp_tunnel *t)
{
	__u16 skipped = t->skipped;
	if (!skipped)
		return;
	__u16 old = m->c->ns, new = bpf_htons(bpf_ntohs(old) - skipped);
	m->c->ns = new;
	m->udp->check = udp_csum_replace(m->udp->check, old, new);
}

/* csum_words adds n 16-bit words at p to a one's complement sum. */
#define CSUM_WORDS(sum, p, n)                                                                      \
	do {                                                                                       \
		__u16 *w_ = (__u16 *)(p);                                                           \
		_Pragma("unroll") for (int i_ = 0; i_ < (n); i_++) (sum) += w_[i_];                 \
	} while (0)

/*
 * lac_answer turns a LAC's ICRQ into the ZLB the LNS would have sent for
 * it, from the LNS's address and port to the LAC's: Ns is the LNS's next
 * (the ICRQ's Nr), Nr acknowledges the ICRQ (its Ns + 1), the header names
 * the LAC's tunnel. The frame keeps its length; the IP and UDP lengths
 * say where the ZLB ends, and receivers trim the rest. It returns XDP_TX,
 * or XDP_DROP for a frame it cannot answer (IPv4 options, IPv6 extension
 * headers: rare enough in front of an LNS to be dropped rather than copied
 * into an answer), before it has changed anything.
 */
static __always_inline int lac_answer(struct lac_msg *m, __u32 family, __u32 version, __u32 lac_id)
{
	if (!m->answerable)
		return XDP_DROP;
	__u8 mac[6];
	__builtin_memcpy(mac, m->eth->dst, 6);
	__builtin_memcpy(m->eth->dst, m->eth->src, 6);
	__builtin_memcpy(m->eth->src, mac, 6);

	__u32 sum = bpf_htons(IPPROTO_UDP) + bpf_htons(sizeof(struct udphdr) + L2TP_CTRL_HDR);
	if (family == 4) {
		struct iphdr *ip = m->ip;
		__be32 a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		ip->tot_len = bpf_htons(sizeof(*ip) + sizeof(struct udphdr) + L2TP_CTRL_HDR);
		ip->frag_off = 0;
		ip->ttl = 64;
		ip->check = 0;
		__u32 ipsum = 0;
		CSUM_WORDS(ipsum, ip, sizeof(*ip) / 2);
		ip->check = csum_fold(ipsum);
		CSUM_WORDS(sum, &ip->saddr, 4);
	} else {
		struct ipv6hdr *ip6 = m->ip;
		__u8 a[16];
		__builtin_memcpy(a, ip6->saddr, 16);
		__builtin_memcpy(ip6->saddr, ip6->daddr, 16);
		__builtin_memcpy(ip6->daddr, a, 16);
		ip6->payload_len = bpf_htons(sizeof(struct udphdr) + L2TP_CTRL_HDR);
		ip6->hop_limit = 64;
		CSUM_WORDS(sum, ip6->saddr, 16);
	}
	__be16 port = m->udp->source;
	m->udp->source = m->udp->dest;
	m->udp->dest = port;
	m->udp->len = bpf_htons(sizeof(struct udphdr) + L2TP_CTRL_HDR);
	m->udp->check = 0;

	struct l2tp_ctrl *c = m->c;
	__u16 ns = bpf_ntohs(c->ns);
	c->ns = c->nr;
	c->nr = bpf_htons(ns + 1);
	c->flags = bpf_htons(L2TP_T | L2TP_L | L2TP_S | version);
	c->length = bpf_htons(L2TP_CTRL_HDR);
	if (version == 3) {
		c->ids[0] = bpf_htons(lac_id >> 16);
		c->ids[1] = bpf_htons(lac_id & 0xffff);
	} else {
		c->ids[0] = bpf_htons(lac_id);
		c->ids[1] = 0;
	}
	CSUM_WORDS(sum, m->udp, sizeof(struct udphdr) / 2);
	CSUM_WORDS(sum, c, L2TP_CTRL_HDR / 2);
	__u16 check = csum_fold(sum);
	m->udp->check = check ? check : 0xffff;
	return XDP_TX;
}

/*
 * l2tp_from_lac does op for a control message from a LAC (where packs
 * l3off, family and the message's offset as verdict_where does). For
 * L2TP_CHECK it returns L2TP_UNKNOWN, L2TP_NEW, L2TP_AHEAD, ADMITTED for a copy of a
 * message passed (translated here and to be passed uncharged), or, for a
 * copy of one of the last 64 messages that was an ICRQ refused, the reason
 * the last was refused for; for L2TP_REFUSE and L2TP_AGAIN what
 * XDP does with the frame; for L2TP_PASS 0. The LAC's next Ns is kept so
 * that only the message the LNS would take next is judged: a copy, or one
 * out of order, is nothing the LNS acts on. A global function, verified
 * once for every place verdict asks it.
 */
__noinline int l2tp_from_lac(struct xdp_md *ctx, __u64 where, __u32 op)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u32 l3off = where_l3off(where), family = where_family(where), off = where_msgoff(where);
	struct lac_msg m = {.eth = data, .ip = data + l3off};
	if (off < sizeof(struct udphdr) || (void *)(m.eth + 1) > data_end)
		return L2TP_UNKNOWN;
	/* One pointer, checked once, for the UDP header and the L2TP one
	 * after it: a pointer below a checked one is past what the verifier
	 * allows. */
	__u32 uoff = off - sizeof(struct udphdr);
	barrier_var(uoff);
	m.udp = data + uoff;
	if ((void *)(m.udp + 1) + L2TP_CTRL_HDR > data_end)
		return L2TP_UNKNOWN;
	m.c = (void *)(m.udp + 1);

	struct cac_l2tp_key k = {.port = m.udp->source, .dir = CAC_L2TP_TO_LNS};
	k.version = bpf_ntohs(m.c->flags) & L2TP_VER;
	k.id = l2tp_id(m.c, k.version);
	if (family == 4) {
		struct iphdr *ip = m.ip;
		if ((void *)(ip + 1) > data_end)
			return L2TP_UNKNOWN;
		l2tp_addr(&k, &ip->saddr, 4);
		m.answerable = ip->version_ihl == 0x45 && l3off + sizeof(*ip) + sizeof(struct udphdr) == off;
	} else {
		struct ipv6hdr *ip6 = m.ip;
		if ((void *)(ip6 + 1) > data_end)
			return L2TP_UNKNOWN;
		l2tp_addr(&k, ip6->saddr, 6);
		m.answerable = l3off + sizeof(*ip6) + sizeof(struct udphdr) == off;
	}
	struct cac_l2tp_tunnel *t = bpf_map_lookup_elem(&l2tp_tunnels, &k);
	if (!t)
		return L2TP_UNKNOWN;
	__u64 now = now_ns();
	if (l2tp_gone(t, now)) {
		l2tp_forget(&k, t->peer_id);
		return L2TP_UNKNOWN;
	}
	if (t->seen_ns != now) /* once a tick of the coarse clock, not every copy */
		t->seen_ns = now;
	__u16 ns = bpf_ntohs(m.c->ns);
	__u16 ahead = ns - t->next_ns;

	switch (code_of(op)) {
	case L2TP_CHECK:
		if (!ahead)
			return L2TP_NEW;
		/* Past the next: should the filter have lost count, the LNS
		 * may take it, so it is judged; but it moves nothing, and a
		 * refusal is a plain drop, so that a made-up Ns cannot push
		 * the tunnel's numbering out of step. */
		if (ahead < 0x8000)
			return L2TP_AHEAD;
		/* An older Ns is a copy: of an ICRQ answered (its ZLB was
		 * lost, or late), answered again; else of a message passed,
		 * which goes on for the LNS to take as a duplicate. */
		__u16 back = t->next_ns - 1 - ns; /* messages before the LAC's last */
		if (back < 64 && ((t->refused >> back) & 1))
			return t->reason;
		lac_translate(&m, t);
		return ADMITTED;
	case L2TP_PASS:
		/* A ZLB takes no Ns of its own. */
		if (!ahead && bpf_ntohs(m.c->length) > L2TP_CTRL_HDR) {
			t->next_ns = ns + 1;
			t->refused <<= 1;
		}
		if (bpf_ntohs(m.c->length) >= sizeof(struct l2tp_ctrl) && (void *)(m.c + 1) <= data_end &&
		    m.c->msg_type == bpf_htons(L2TP_MSG_STOPCCN) && !t->closed_ns)
			t->closed_ns = now;
		lac_translate(&m, t);
		return 0;
	case L2TP_REFUSE:
		/* Only an ICRQ answered moves the LAC's numbering ahead of
		 * the LNS's; one that cannot be answered is dropped, and the
		 * LAC's retransmission judged anew. */
		if (lac_answer(&m, family, k.version, t->peer_id) != XDP_TX)
			return XDP_DROP;
		t->next_ns = ns + 1;
		t->refused = t->refused << 1 | 1;
		t->reason = code_arg(op);
		__sync_fetch_and_add(&t->skipped, 1);
		return XDP_TX;
	case L2TP_AGAIN:
		return lac_answer(&m, family, k.version, t->peer_id);
	}
	return 0;
}
