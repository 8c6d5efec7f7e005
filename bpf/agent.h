/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Session agents (docs/design.md "Trusted first"): known SIP peers. A request from one is
 * held by the agent's own bucket instead of a per-source one, and stamps
 * the agent's last-request time, which the daemon's keep-alive pings and
 * its back-in-service rule read. A response from one whose code is on the
 * agent's out-service list goes to user space, which checks that it
 * answers a dialog-creating request before taking the agent out. The
 * daemon fills the address table from the agents' hostnames.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "parse.h"
#include "source.h"
#include "stats.h"

#define NO_AGENT 0xffffffff

/* agent_of is the agent an IP source is, or NO_AGENT. */
static __always_inline __u32 agent_of(struct frame *f)
{
	if (!f->family)
		return NO_AGENT;
	struct cac_prefix p;
	prefix_of(f, &p);
	__u32 *a = bpf_map_lookup_elem(&agents, &p);
	return a && *a < CAC_MAX_AGENTS ? *a : NO_AGENT;
}

/* agent_at is agent_of for the frame of ctx whose IP header is at l3off,
 * as a global function: its key stays off the stack of admission, which
 * is deep enough already. */
__noinline __u32 agent_at(struct xdp_md *ctx, __u32 l3off, __u32 family)
{
	if (!ctx)
		return NO_AGENT;
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.l3off = l3off,
		.family = family,
	};
	return agent_of(&f);
}

/* agent_saw stamps an agent's last request. */
static __always_inline void agent_saw(__u32 agent, __u64 now)
{
	__u64 *seen = bpf_map_lookup_elem(&agent_seen, &agent);
	if (seen)
		*seen = now; /* one aligned word: a reader sees the old time or the new */
}

/*
 * sip_event_out copies a SIP message and its addresses into the ring
 * buffer. The message is read with bpf_probe_read_kernel, which takes a
 * length the verifier only needs to bound, where a packet pointer would
 * need a proof for every byte.
 */
static __always_inline void sip_event_out(struct frame *f, __u8 kind, __u32 agent, __u16 code)
{
	struct cac_sip_event *ev = bpf_ringbuf_reserve(&sip_events, sizeof(*ev), 0);
	if (!ev) {
		lost_sip_event();
		return;
	}
	void *data = f->data, *data_end = f->data_end;
	__u32 l3off = f->l3off & 0x3f;
	ev->kind = kind;
	ev->family = f->family;
	ev->agent = agent;
	ev->code = code;
	__builtin_memset(ev->saddr, 0, sizeof(ev->saddr));
	__builtin_memset(ev->daddr, 0, sizeof(ev->daddr));
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
	/* The UDP header is right before the message. */
	__u32 uoff = f->msgoff - 8;
	barrier_var(uoff); /* bound the register that offsets */
	if (uoff > 1016)
		goto discard;
	struct udphdr *udp = data + uoff;
	if ((void *)(udp + 1) > data_end)
		goto discard;
	ev->sport = bpf_ntohs(udp->source);
	ev->dport = bpf_ntohs(udp->dest);
	__u32 len = f->msglen;
	if (len > CAC_SIP_COPY)
		len = CAC_SIP_COPY;
	barrier_var(len);
	if (len > CAC_SIP_COPY) /* never: bounds the register the helper is given */
		goto discard;
	if ((void *)(udp + 1) + len > data_end)
		goto discard;
	if (bpf_probe_read_kernel(ev->data, len, udp + 1))
		goto discard;
	ev->len = len;
	bpf_ringbuf_submit(ev, 0);
	return;
discard:
	bpf_ringbuf_discard(ev, 0);
}

/* out_code reports whether code is on an agent's out-service list. */
static __always_inline int out_code(struct cac_agent *a, __u32 code)
{
	if (code < 300 || code > 699)
		return 0;
	__u32 i = code - 300;
	__u32 w = i >> 6;
	barrier_var(w); /* bound the register that indexes */
	if (w >= CAC_OUT_CODES_WORDS)
		return 0;
	return (a->out_codes[w] >> (i & 63)) & 1;
}
