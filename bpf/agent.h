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
#include "sip_event.h"
#include "source.h"
#include "stats.h"

/* agent_of is the agent an IP source is, or NO_AGENT. */
static __always_inline __u32 agent_of(struct frame *f)
{
	if (!f->family)
		return NO_AGENT;
	union prefix_words p;
	prefix_of(f, &p);
	__u32 *a = bpf_map_lookup_elem(&agents, &p.p);
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
	/* One aligned word: a reader sees the old time or the new. Written
	 * only when the coarse clock has moved, so that a flood from one
	 * agent on two CPUs writes its line once a tick, not every frame. */
	if (seen && *seen != now)
		*seen = now;
}

/* sip_event_out hands a SIP message to user space, and counts one the
 * ring buffer had no room for; ifindex as sip_event_copy takes it. */
static __always_inline void sip_event_out(struct frame *f, __u8 kind, __u32 agent, __u32 code, __u32 ifindex)
{
	if (sip_event_copy(f, kind, agent, code, 0, ifindex))
		lost_sip_event();
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
