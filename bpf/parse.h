/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Outer layers: Ethernet, up to two VLAN tags, IPv4 or IPv6, UDP. Everything
 * works on offsets from the start of the frame; every read is preceded by a
 * bounds check against data_end, which is what the verifier needs to see.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "cac.h"
#include "maps.h"

/* udp_port_kind returns what a UDP destination port carries. */
static __always_inline __u8 udp_port_kind(__be16 dest)
{
	__u32 zero = 0;
	struct cac_ports *ports = bpf_map_lookup_elem(&udp_ports, &zero);
	__u32 port = bpf_ntohs(dest);
	/* Verifiers older than Linux 7.0 (Debian 12's 6.1 among them) know
	 * nothing of a byte swap's result and refuse it as an unbounded index:
	 * bound it where they can see it. tests/kernels runs the object on 6.1. */
	barrier_var(port);
	return ports ? ports->kind[port & 0xffff] : CAC_PORT_NONE;
}

/* What a UDP datagram carries, as the IP parsers below ask: by its
 * destination port, for frames coming in. A program that includes this
 * file may name its own reading first: tc_dialogs.c, which reads frames
 * going out, takes a datagram from a SIP port as well as one to it
 * (udp_kind_egress). */
#ifndef UDP_KIND
#define UDP_KIND(udp) udp_port_kind((udp)->dest)
#endif

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_PPP_DISC 0x8863
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define ETH_P_QINQ 0x9100

#define IPPROTO_HOPOPTS 0
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_ROUTING 43
#define IPPROTO_FRAGMENT 44
#define IPPROTO_DSTOPTS 60

/* CAC_MAX_VLANS, CAC_MAX_TAGS and CAC_MAX_EXTHDRS, how far a frame is
 * walked, are in shared.h. */

/* A classifier result: the kind in the low byte, the class above it, and
 * the flags of enum cac_result_flag (shared.h) higher up. */
#define RESULT(kind, class) ((kind) | ((class) << 8))
#define RESULT_KIND(r) ((r) & 0xff)
#define RESULT_CLASS(r) (((r) >> 8) & 0xff)
/* A SIP response is kind other, with its status code above the class. */
#define RESULT_SIP_RESPONSE(code) (RESULT(CAC_KIND_OTHER, 0) | ((code) << 16))
#define RESULT_CODE(r) (((r) >> 16) & 0x3ff)

/* The frame under classification; len is data_end - data as a scalar. */
struct frame {
	void *data;
	void *data_end;
	__u32 len;
	/* Where the source is, for the per-source and account levels. */
	__u16 l3off;  /* the header after Ethernet and VLAN tags */
	__u8 vlans;   /* VLAN tags in front of it */
	__u8 family;  /* 4 or 6 once an IP header is parsed */
	/* Where a SIP message is, for what goes to user space: after the
	 * leading bytes a receiver skips, which follow the UDP header at
	 * udpoff. */
	__u16 msgoff;
	__u16 msglen;
	__u16 udpoff;
};

struct ethhdr {
	__u8 dst[6];
	__u8 src[6];
	__be16 proto;
};

struct vlanhdr {
	__be16 tci;
	__be16 proto;
};

struct iphdr {
	__u8 version_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__u16 check;
	__be32 saddr;
	__be32 daddr;
};

struct ipv6hdr {
	__be32 version_class_flow;
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 saddr[16];
	__u8 daddr[16];
};

struct ipv6_opthdr {
	__u8 nexthdr;
	__u8 len; /* in 8-byte units, not counting the first 8 */
};

struct ipv6_fraghdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset in 8-byte units << 3, low bit: more fragments */
	__be32 id;
};

struct udphdr {
	__be16 source;
	__be16 dest;
	__be16 len;
	__u16 check;
};

/* udp_kind_egress is what a datagram going out carries: SIP to or from a
 * watched SIP port (the SIP server's port is the source of what it sends,
 * and its peer's may be any), L2TP from a watched L2TP port (the LNS's),
 * else none. */
static __always_inline __u8 udp_kind_egress(struct udphdr *udp)
{
	__u32 zero = 0;
	struct cac_ports *ports = bpf_map_lookup_elem(&udp_ports, &zero);
	if (!ports)
		return CAC_PORT_NONE;
	__u32 dest = bpf_ntohs(udp->dest), source = bpf_ntohs(udp->source);
	barrier_var(dest); /* bound where the verifier sees it, as above */
	barrier_var(source);
	__u8 to = ports->kind[dest & 0xffff], from = ports->kind[source & 0xffff];
	if (to == CAC_PORT_SIP || from == CAC_PORT_SIP)
		return CAC_PORT_SIP;
	return from == CAC_PORT_L2TP ? CAC_PORT_L2TP : CAC_PORT_NONE;
}

struct tcphdr {
	__be16 source;
	__be16 dest;
	__be32 seq;
	__be32 ack_seq;
	__u8 doff;
	__u8 flags;
	__be16 window;
	__u16 check;
	__be16 urg_ptr;
};

#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_ACK 0x10

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff
#define IP6_OFFSET 0xfff8
#define IP6_MF 0x0001

static __always_inline int is_exthdr(__u8 next)
{
	return next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS ||
	       next == IPPROTO_FRAGMENT;
}

static __always_inline int is_vlan(__u16 proto)
{
	return proto == ETH_P_8021Q || proto == ETH_P_8021AD || proto == ETH_P_QINQ;
}

/* What parse_l2 returns for a frame with more VLAN tags than it walks:
 * not an EtherType (0xffff is reserved). Linux strips any number of
 * priority tags (VID 0) and may hand what is inside to a SIP server, so
 * such a frame is malformed, never unseen. */
#define ETH_P_TOO_DEEP 0xffff

/*
 * parse_l2 returns the EtherType after at most CAC_MAX_TAGS VLAN tags and
 * sets *l3off to the offset of the header it announces. It returns 0 (no
 * EtherType) for a frame too short for its tags, and ETH_P_TOO_DEEP for
 * one with more of them.
 */
static __always_inline __u16 parse_l2(struct frame *f, __u32 *l3off)
{
	void *data = f->data, *data_end = f->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return 0;
	__u16 proto = bpf_ntohs(eth->proto);
	__u32 off = sizeof(*eth);

#pragma unroll
	for (int i = 0; i < CAC_MAX_TAGS; i++) {
		if (!is_vlan(proto))
			break;
		struct vlanhdr *vh = data + off;
		if ((void *)(vh + 1) > data_end)
			return 0;
		proto = bpf_ntohs(vh->proto);
		off += sizeof(*vh);
	}
	*l3off = off;
	f->l3off = off;
	f->vlans = CAC_MAX_TAGS;
	if (is_vlan(proto))
		return ETH_P_TOO_DEEP;
	f->l3off = off;
	f->vlans = (off - sizeof(*eth)) / sizeof(struct vlanhdr);
	return proto;
}

/* What the IP parsers return when a watched datagram is ready to classify;
 * otherwise they return the kind of the frame. */
#define UDP_MSG_READY CAC_KIND_CLASS

/* Where a UDP datagram on a watched port sits, once its lengths agree. */
struct udp_msg {
	__u32 off;	/* first payload byte */
	__u32 len;	/* payload bytes present in this (first) fragment */
	__u8 kind;	/* enum cac_port_kind */
	__u8 fragmented; /* a first fragment: the payload goes on elsewhere */
};

#ifndef CAC_EGRESS
/*
 * tcp_connect reads a TCP segment at l4off: a SYN without ACK to a SIP TCP
 * port (tcp_ports) is ready to classify as a sip-connect, and every other
 * segment is not ours. The flags are tested before the port, so a
 * segment of an open connection reads no map (docs/design.md, "SIP
 * connections").
 */
static __always_inline int tcp_connect(struct frame *f, __u32 l4off, struct udp_msg *msg)
{
	struct tcphdr *tcp = f->data + l4off;
	if ((void *)(tcp + 1) > f->data_end)
		return CAC_KIND_UNWATCHED;
	if ((tcp->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) != TCP_FLAG_SYN)
		return CAC_KIND_UNWATCHED;
	__u32 zero = 0;
	struct cac_tcp_ports *ports = bpf_map_lookup_elem(&tcp_ports, &zero);
	__u32 port = bpf_ntohs(tcp->dest);
	barrier_var(port); /* bound where old verifiers see it (udp_port_kind) */
	if (!ports || !ports->sip[port & 0xffff])
		return CAC_KIND_UNWATCHED;
	f->udpoff = l4off;
	msg->off = l4off;
	msg->len = 0;
	msg->kind = CAC_PORT_SIP_TCP;
	msg->fragmented = 0;
	return UDP_MSG_READY;
}
#else
/* The egress program reads what goes out: no connection is opened to it. */
#define tcp_connect(f, l4off, msg) CAC_KIND_UNWATCHED
#endif

/*
 * udp_watched checks the lengths of a UDP datagram to a watched port (kind)
 * whose header sits at l4off, inside the frame. It returns
 * CAC_KIND_MALFORMED when the IP and UDP lengths disagree, and UDP_MSG_READY
 * with *msg filled otherwise.
 * ip_payload is the IP payload length from l4off; fragmented is set for the
 * first fragment of a larger datagram, whose UDP length runs past it. Over
 * IPv6 (v6), Linux takes a UDP length of 0 for the whole IP payload (a
 * jumbogram's), and so does this.
 */
static __always_inline int udp_watched(struct udphdr *udp, __u32 l4off, __u32 ip_payload,
				       int fragmented, __u8 kind, struct udp_msg *msg, int v6)
{
	__u32 udp_len = bpf_ntohs(udp->len);
	if (udp_len == 0 && v6)
		udp_len = ip_payload;
	if (ip_payload < sizeof(*udp) || udp_len < sizeof(*udp))
		return CAC_KIND_MALFORMED;
	if (udp_len > ip_payload) {
		if (!fragmented)
			return CAC_KIND_MALFORMED;
		udp_len = ip_payload;
	}
	msg->off = l4off + sizeof(*udp);
	msg->len = udp_len - sizeof(*udp);
	msg->kind = kind;
	msg->fragmented = !!fragmented;
	return UDP_MSG_READY;
}

/* parse_ipv4 finds a UDP datagram to a watched port behind an IPv4 header. */
static __always_inline int parse_ipv4(struct frame *f, __u32 l3off, struct udp_msg *msg)
{
	void *data = f->data, *data_end = f->data_end;
	struct iphdr *ip = data + l3off;
	if ((void *)(ip + 1) > data_end)
		return CAC_KIND_UNWATCHED;
	if ((ip->version_ihl >> 4) != 4 || (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP))
		return CAC_KIND_UNWATCHED;
	__u32 ihl = (ip->version_ihl & 0x0f) * 4;
	if (ihl < sizeof(*ip) || data + l3off + ihl > data_end)
		return CAC_KIND_UNWATCHED;

	__u16 frag = bpf_ntohs(ip->frag_off);
	__u32 l4off = l3off + ihl;
	if (ip->protocol == IPPROTO_TCP) {
		if (frag & IP_OFFSET)
			return CAC_KIND_UNWATCHED;
		f->family = 4;
		return tcp_connect(f, l4off, msg);
	}
	if (frag & IP_OFFSET)
		return CAC_KIND_FRAGMENT;
	f->family = 4;

	struct udphdr *udp = data + l4off;
	if ((void *)(udp + 1) > data_end)
		return CAC_KIND_UNWATCHED;

	/* Lengths are checked only on a watched port: others are not ours. */
	__u8 kind = UDP_KIND(udp);
	if (kind == CAC_PORT_NONE)
		return CAC_KIND_UNWATCHED;
	__u32 tot_len = bpf_ntohs(ip->tot_len);
	if (tot_len < ihl || l3off + tot_len > f->len)
		return CAC_KIND_MALFORMED;
	return udp_watched(udp, l4off, tot_len - ihl, frag & IP_MF, kind, msg, 0);
}

/*
 * parse_ipv6 walks up to CAC_MAX_EXTHDRS extension headers (hop-by-hop,
 * routing, destination options, fragment) to a UDP datagram on a watched
 * port; one more is malformed.
 */
static __always_inline int parse_ipv6(struct frame *f, __u32 l3off, struct udp_msg *msg)
{
	void *data = f->data, *data_end = f->data_end;
	struct ipv6hdr *ip6 = data + l3off;
	if ((void *)(ip6 + 1) > data_end)
		return CAC_KIND_UNWATCHED;
	if ((*(__u8 *)ip6 >> 4) != 6)
		return CAC_KIND_UNWATCHED;

	__u8 nexthdr = ip6->nexthdr;
	__u32 off = l3off + sizeof(*ip6);
	int fragmented = 0;
	f->family = 6;

#pragma unroll
	for (int i = 0; i < CAC_MAX_EXTHDRS; i++) {
		if (nexthdr != IPPROTO_FRAGMENT && is_exthdr(nexthdr)) {
			struct ipv6_opthdr *opt = data + off;
			if ((void *)(opt + 1) > data_end)
				return CAC_KIND_UNWATCHED;
			nexthdr = opt->nexthdr;
			off += (opt->len + 1) * 8;
		} else if (nexthdr == IPPROTO_FRAGMENT) {
			struct ipv6_fraghdr *fh = data + off;
			if ((void *)(fh + 1) > data_end)
				return CAC_KIND_UNWATCHED;
			__u16 frag = bpf_ntohs(fh->frag_off);
			/* The fragmentable part may start with destination
			 * options or routing before the UDP header. */
			if (frag & IP6_OFFSET)
				return fh->nexthdr == IPPROTO_UDP || fh->nexthdr == IPPROTO_DSTOPTS ||
						       fh->nexthdr == IPPROTO_ROUTING
					       ? CAC_KIND_FRAGMENT
					       : CAC_KIND_UNWATCHED;
			fragmented = frag & IP6_MF;
			nexthdr = fh->nexthdr;
			off += sizeof(*fh);
		} else {
			break;
		}
	}
	if (is_exthdr(nexthdr))
		return CAC_KIND_MALFORMED;
	if (nexthdr == IPPROTO_TCP)
		return tcp_connect(f, off, msg);
	if (nexthdr != IPPROTO_UDP)
		return CAC_KIND_UNWATCHED;

	struct udphdr *udp = data + off;
	if ((void *)(udp + 1) > data_end)
		return CAC_KIND_UNWATCHED;
	__u8 kind = UDP_KIND(udp);
	if (kind == CAC_PORT_NONE)
		return CAC_KIND_UNWATCHED;

	/* A zero payload length means a jumbogram: never a signalling message. */
	__u32 ip_end = l3off + sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
	if (ip6->payload_len == 0 || ip_end > f->len || off > ip_end)
		return CAC_KIND_MALFORMED;
	return udp_watched(udp, off, ip_end - off, fragmented, kind, msg, 1);
}
