/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SIP events: the messages user space must see, through the sip_events
 * ring buffer (struct cac_sip_event). Both programs write them: the XDP
 * program an agent's out-service response and a refused request to
 * answer, the egress program an INVITE it refused on an agent's behalf.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "parse.h"
#include "sip_msg.h"

/*
 * sip_event_copy copies a SIP message and its addresses into the ring
 * buffer, and returns -1 when it could not (no room in the ring, or a
 * frame it cannot read the addresses or message of). The message
 * is read with bpf_probe_read_kernel, which takes a
 * length the verifier only needs to bound, where a packet pointer would
 * need a proof for every byte.
 */
/* code is the response code, and in bit 16 whether it answers a request
 * the server sent; callid the hash of a session's Call-ID, or 0; ifindex
 * the interface a request to answer came in on, whose link-layer header
 * goes with it, or 0. */
static __always_inline int sip_event_copy(struct frame *f, __u8 kind, __u32 agent, __u32 code, __u64 callid,
					  __u32 ifindex)
{
	struct cac_sip_event *ev = bpf_ringbuf_reserve(&sip_events, sizeof(*ev), 0);
	if (!ev)
		return -1;
	void *data = f->data, *data_end = f->data_end;
	__u32 l3off = f->l3off & 0x3f;
	ev->kind = kind;
	ev->family = f->family;
	ev->agent = agent;
	ev->code = code & 0xffff;
	ev->sent = (code >> 16) & 1;
	ev->callid = callid;
	__builtin_memset(ev->saddr, 0, sizeof(ev->saddr));
	__builtin_memset(ev->daddr, 0, sizeof(ev->daddr));
	__builtin_memset(ev->l2, 0, sizeof(ev->l2));
	ev->l2len = 0;
	ev->ifindex = ifindex;
	/* A header longer than l2 holds (more tags than the classifier
	 * walks, never admitted this far) goes without: the answer is
	 * routed. */
	if (ifindex && l3off >= sizeof(struct ethhdr) && l3off <= CAC_SIP_L2_MAX && data + CAC_SIP_L2_MAX <= data_end) {
		__builtin_memcpy(ev->l2, data, CAC_SIP_L2_MAX);
		ev->l2len = l3off;
	}
	if (f->family == 4) {
		struct iphdr *ip = data + l3off;
		if ((void *)(ip + 1) > data_end)
			goto discard;
		ev->saddr[10] = ev->saddr[11] = ev->daddr[10] = ev->daddr[11] = 0xff;
		__builtin_memcpy(&ev->saddr[12], &ip->saddr, 4);
		__builtin_memcpy(&ev->daddr[12], &ip->daddr, 4);
	} else {
		struct ipv6hdr *ip6 = data + l3off;
		if ((void *)(ip6 + 1) > data_end)
			goto discard;
		__builtin_memcpy(ev->saddr, ip6->saddr, 16);
		__builtin_memcpy(ev->daddr, ip6->daddr, 16);
	}
	/* The UDP header sits where the frame word says; the leading bytes
	 * a receiver skips lie between it and the message. */
	__u32 uoff = f->udpoff;
	barrier_var(uoff); /* bound the register that offsets */
	if (uoff < 14 || uoff > 1016)
		goto discard;
	struct udphdr *udp = data + uoff;
	if ((void *)(udp + 1) > data_end)
		goto discard;
	ev->sport = bpf_ntohs(udp->source);
	ev->dport = bpf_ntohs(udp->dest);
	__u32 len = f->msglen, moff = f->msgoff;
	if (len > CAC_SIP_COPY)
		len = CAC_SIP_COPY;
	barrier_var(len);
	if (len > CAC_SIP_COPY) /* never: bounds the register the helper is given */
		goto discard;
	barrier_var(moff);
	if (moff > SIP_MSG_OFF_MAX)
		goto discard;
	void *msg = data + moff;
	if (msg + len > data_end)
		goto discard;
	if (bpf_probe_read_kernel(ev->data, len, msg))
		goto discard;
	ev->len = len;
	bpf_ringbuf_submit(ev, 0);
	return 0;
discard:
	bpf_ringbuf_discard(ev, 0);
	return -1;
}
