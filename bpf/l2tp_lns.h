/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The LNS's side of a translated tunnel (l2tp.h), in the egress program:
 * an SCCRP the LNS sends makes the tunnel's two entries, and the Nr of
 * each control message it sends afterwards is put up by the ICRQs the
 * filter answered, so that the LAC sees its own numbering acknowledged.
 * Headers are read with bpf_skb_load_bytes: on egress the payload may
 * lie in pages, and only a few bytes of it matter.
 */
#pragma once

#include "l2tp.h"
#include "clock.h"
#include "where.h"

/* An AVP's header: M and H bits and the length, vendor, attribute. */
struct l2tp_avp {
	__be16 flags_len;
	__be16 vendor;
	__be16 type;
};

/*
 * sccrp_assigned_id returns the ID the LNS gives itself in an SCCRP whose
 * AVPs run from off to end: the Assigned Tunnel ID (v2) or Assigned Control
 * Connection ID (v3), or 0 when there is none to read (a hidden one, whose
 * value is encrypted with the tunnel secret, among them: that tunnel is
 * not translated). A global function: its loop is verified once.
 */
__noinline int sccrp_assigned_id(struct __sk_buff *skb, __u32 off, __u32 end, __u32 version)
{
	for (int i = 0; i < L2TP_AVPS_MAX && off + sizeof(struct l2tp_avp) <= end; i++) {
		struct l2tp_avp avp;
		if (bpf_skb_load_bytes(skb, off, &avp, sizeof(avp)) < 0)
			return 0;
		__u32 flags = bpf_ntohs(avp.flags_len), len = flags & L2TP_AVP_LEN;
		if (len < sizeof(avp))
			return 0;
		__u16 type = bpf_ntohs(avp.type);
		if (!avp.vendor && ((version == 2 && type == L2TP_AVP_TUNNEL_ID && len == 8) ||
				    (version == 3 && type == L2TP_AVP_CCID && len == 10))) {
			if (flags & L2TP_AVP_H)
				return 0;
			__be32 id32 = 0;
			__be16 id16 = 0;
			if (version == 3)
				return bpf_skb_load_bytes(skb, off + sizeof(avp), &id32, 4) < 0 ? 0 : bpf_ntohl(id32);
			return bpf_skb_load_bytes(skb, off + sizeof(avp), &id16, 2) < 0 ? 0 : bpf_ntohs(id16);
		}
		off += len;
	}
	return 0;
}

/* lns_learn makes a tunnel's two entries from the LNS's SCCRP to the LAC
 * k names (k->id the LAC's ID): the LAC's next Ns is what the SCCRP
 * acknowledges. An SCCRP again (a retransmission, or a LAC that used the
 * ID before) starts the tunnel afresh: nothing was answered in it yet. */
static __always_inline void lns_learn(struct cac_l2tp_key *k, __u32 lns_id, __u16 nr, __u64 now)
{
	struct cac_l2tp_tunnel t = {.seen_ns = now, .peer_id = lns_id};
	bpf_map_update_elem(&l2tp_tunnels, k, &t, BPF_ANY);
	t.peer_id = k->id;
	t.next_ns = nr;
	k->dir = CAC_L2TP_TO_LNS;
	k->id = lns_id;
	bpf_map_update_elem(&l2tp_tunnels, k, &t, BPF_ANY);
}

/*
 * l2tp_from_lns handles a control message the LNS sends (where is its
 * frame word, where.h: l3off, family and the L2TP header's offset as on
 * ingress, msglen the bytes of the datagram's payload at hand, fragmented
 * set for a first fragment). A global function, verified once.
 */
__noinline int l2tp_from_lns(struct __sk_buff *skb, __u64 where)
{
	__u32 l3off = where_l3off(where), family = where_family(where), off = where_msgoff(where);
	struct l2tp_ctrl c = {};
	struct udphdr udp;
	if (off < sizeof(udp) || bpf_skb_load_bytes(skb, off - sizeof(udp), &udp, sizeof(udp)) < 0 ||
	    bpf_skb_load_bytes(skb, off, &c, L2TP_CTRL_HDR) < 0)
		return 0;
	__u16 flags = bpf_ntohs(c.flags), length = bpf_ntohs(c.length);
	__u32 version = flags & L2TP_VER;
	/* A control message of a tunnel, as the XDP side reads one. */
	__u32 present = where_msglen(where), fragmented = where_fragmented(where);
	if ((flags & (L2TP_T | L2TP_L | L2TP_S)) != (L2TP_T | L2TP_L | L2TP_S) || (version != 2 && version != 3) ||
	    (version == 2 && (flags & L2TP_O)) || length < L2TP_CTRL_HDR || (length > present && !fragmented))
		return 0;
	__u16 type = 0;
	if (length >= sizeof(c) && bpf_skb_load_bytes(skb, off, &c, sizeof(c)) == 0 && !c.avp_vendor && !c.avp_type)
		type = bpf_ntohs(c.msg_type);

	struct cac_l2tp_key k = {.port = udp.dest, .version = version, .dir = CAC_L2TP_TO_LAC};
	k.id = l2tp_id(&c, version);
	__u8 addr[16] = {};
	int err = family == 4 ? bpf_skb_load_bytes(skb, l3off + 16, addr, 4)
			      : bpf_skb_load_bytes(skb, l3off + 24, addr, 16);
	if (err < 0)
		return 0;
	l2tp_addr(&k, addr, family);
	__u64 now = now_ns();
	if (type == L2TP_MSG_SCCRP) {
		__u32 lns_id = sccrp_assigned_id(skb, off + sizeof(c), off + length, version);
		if (lns_id)
			lns_learn(&k, lns_id, bpf_ntohs(c.nr), now);
		return 0;
	}

	struct cac_l2tp_tunnel *lac = bpf_map_lookup_elem(&l2tp_tunnels, &k);
	if (!lac)
		return 0;
	__u32 lac_id = k.id;
	k.dir = CAC_L2TP_TO_LNS;
	k.id = lac->peer_id;
	struct cac_l2tp_tunnel *t = bpf_map_lookup_elem(&l2tp_tunnels, &k);
	if (!t || l2tp_gone(t, now)) {
		l2tp_forget(&k, lac_id);
		return 0;
	}
	t->seen_ns = now;
	if (type == L2TP_MSG_STOPCCN && !t->closed_ns)
		t->closed_ns = now;
	__u16 skipped = t->skipped;
	if (!skipped)
		return 0;
	__be16 nr = c.nr, translated = bpf_htons(bpf_ntohs(c.nr) + skipped);
	if (bpf_skb_store_bytes(skb, off + 10, &translated, sizeof(translated), 0) < 0)
		return 0;
	bpf_l4_csum_replace(skb, off - sizeof(udp) + 6, nr, translated,
			    sizeof(translated) | (family == 4 ? BPF_F_MARK_MANGLED_0 : 0));
	return 0;
}
