/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * L2TP control messages and the tunnels whose sequence numbers the filter
 * keeps consistent (docs/design.md "Refusing an ICRQ"). A refused ICRQ is
 * acknowledged to the LAC with a ZLB in the LNS's name, so the LAC does
 * not retransmit it until it closes the tunnel; the LNS never saw it, so
 * from then on the LAC's Ns is ahead of what the LNS expects by the ICRQs
 * answered. The XDP program takes that many off the Ns of the LAC's
 * messages (l2tp_lac.h), the egress program adds them to the Nr of the
 * LNS's (l2tp_lns.h). The table is filled from the LNS's SCCRP on egress:
 * a tunnel the filter did not see set up is not translated, and an ICRQ
 * of it refused can only be dropped. internal/model/l2tp is the same in Go.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "cac.h"
#include "maps.h"
#include "parse.h"

#define L2TP_T 0x8000 /* control message */
#define L2TP_L 0x4000 /* length present */
#define L2TP_S 0x0800 /* sequence numbers present */
#define L2TP_O 0x0200 /* offset size present (v2 only) */
#define L2TP_VER 0x000f
#define L2TP_CTRL_HDR 12 /* v2 and v3 over UDP alike */
#define L2TP_AVP_H 0x4000
#define L2TP_AVP_LEN 0x03ff
#define L2TP_MSG_SCCRQ 1
#define L2TP_MSG_SCCRP 2
#define L2TP_MSG_STOPCCN 4
#define L2TP_MSG_ICRQ 10
/* Assigned Tunnel ID (v2, 2 bytes) and Assigned Control Connection ID
 * (v3, 4 bytes): the ID the sender of an SCCRP(/SCCRQ) wants to be named by. */
#define L2TP_AVP_TUNNEL_ID 9
#define L2TP_AVP_CCID 61

/* The control header and the Message Type AVP that must follow it. */
struct l2tp_ctrl {
	__be16 flags;
	__be16 length;
	__be16 ids[2]; /* v2: tunnel, session; v3: control connection ID */
	__be16 ns;
	__be16 nr;
	__be16 avp_flags_len;
	__be16 avp_vendor;
	__be16 avp_type;
	__be16 msg_type;
};

/* l2tp_id is the ID a control header names its receiver by. */
static __always_inline __u32 l2tp_id(struct l2tp_ctrl *c, __u32 version)
{
	if (version == 3)
		return (__u32)bpf_ntohs(c->ids[0]) << 16 | bpf_ntohs(c->ids[1]);
	return bpf_ntohs(c->ids[0]);
}

/* l2tp_addr puts an IP address in a key, IPv4 mapped into IPv6. */
static __always_inline void l2tp_addr(struct cac_l2tp_key *k, void *addr, __u32 family)
{
	if (family == 4) {
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		__builtin_memcpy(&k->addr[12], addr, 4);
	} else {
		__builtin_memcpy(k->addr, addr, 16);
	}
}

/* l2tp_gone reports a tunnel idle past CAC_L2TP_IDLE_NS, or closed for
 * longer than CAC_L2TP_CLOSE_HOLD_NS: its entries are deleted. */
static __always_inline int l2tp_gone(struct cac_l2tp_tunnel *t, __u64 now)
{
	if (t->closed_ns && now > t->closed_ns + CAC_L2TP_CLOSE_HOLD_NS)
		return 1;
	return now > t->seen_ns + CAC_L2TP_IDLE_NS;
}

/* l2tp_forget deletes both entries of a tunnel; k is its TO_LNS key. */
static __always_inline void l2tp_forget(struct cac_l2tp_key *k, __u32 lac_id)
{
	bpf_map_delete_elem(&l2tp_tunnels, k);
	k->dir = CAC_L2TP_TO_LAC;
	k->id = lac_id;
	bpf_map_delete_elem(&l2tp_tunnels, k);
}

/* csum_fold folds a 32-bit one's complement sum into a checksum. */
static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* csum_replace is RFC 1624's update of a checksum for one 16-bit word
 * changed from old to new; a UDP checksum of 0 (none, over IPv4) stays. */
static __always_inline __u16 udp_csum_replace(__u16 check, __u16 old, __u16 new)
{
	if (!check)
		return 0;
	__u16 c = csum_fold((__u16)~check + (__u32)(__u16)~old + new);
	return c ? c : 0xffff;
}
