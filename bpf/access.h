/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Access control (docs/design.md, "Access control"): a frame of a watched
 * carrier from a denied source is dropped right after the header that
 * names it, before any SIP or L2TP parse, for the cost of one or two
 * lookups. A source is denied by the static lists (a deny prefix or MAC
 * whose longest match is not an allow), or by the deny table, which the
 * fast path fills itself: a source refused for its own doing (its
 * per-source bucket, its account, its malformed frames) refused times
 * within the auto-deny window is denied for deny-for. Session agents
 * and allowed sources are never auto-denied. internal/model/admission
 * is the same logic in Go.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "parse.h"
#include "clock.h"
#include "source.h"
#include "agent.h"
#include "where.h"
#include "admit.h"

/* list_of is what the static lists say of a frame's source: the longest
 * prefix of its IP address, or its MAC for a frame with no IP header. */
static __always_inline __u32 list_of(struct frame *f)
{
	__u32 *v;
	if (f->family) {
		union prefix_words p;
		prefix_of(f, &p);
		v = bpf_map_lookup_elem(&access_list, &p.p);
	} else {
		struct ethhdr *eth = f->data;
		if ((void *)(eth + 1) > f->data_end)
			return CAC_ACCESS_NONE;
		__u64 mac = 0;
		__builtin_memcpy(&mac, eth->src, 6);
		v = bpf_map_lookup_elem(&access_mac, &mac);
	}
	return v ? *v : CAC_ACCESS_NONE;
}

/* The deny key as the three words it is written in (deny_key_of). */
union deny_key_words {
	struct cac_deny_key k;
	__u64 w[3];
};
_Static_assert(sizeof(union deny_key_words) == sizeof(struct cac_deny_key), "a deny key is three words");

/*
 * deny_key_of fills *u with the deny table's key of a frame's source:
 * its IP address, IPv6 cut to the settings' prefix, or its MAC. It
 * returns 0 for a frame too short, which a watched one never is. The
 * key is written a word at a time, as the table's hash reads it: a word
 * read back from smaller stores waits for them to reach the cache
 * (source_store, source.h), and a denied frame's whole cost is this
 * key and its lookup (BENCHMARKS.md, "Denied sources and SIP connections").
 */
static __always_inline int deny_key_of(struct frame *f, struct cac_access_settings *as,
				       union deny_key_words *u)
{
	u->w[0] = f->family; /* family is the key's first byte, its padding zero */
	if (f->family == 4) {
		struct iphdr *ip = f->data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > f->data_end)
			return 0;
		__u32 saddr;
		__builtin_memcpy(&saddr, &ip->saddr, 4);
		u->w[1] = saddr;
		u->w[2] = 0;
		return 1;
	}
	if (f->family == 6) {
		struct ipv6hdr *ip6 = f->data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > f->data_end)
			return 0;
		__u64 a, b;
		__builtin_memcpy(&a, &ip6->saddr[0], 8);
		__builtin_memcpy(&b, &ip6->saddr[8], 8);
		prefix_cut(&a, &b, as->ipv6_prefix);
		u->w[1] = a;
		u->w[2] = b;
		return 1;
	}
	struct ethhdr *eth = f->data;
	if ((void *)(eth + 1) > f->data_end)
		return 0;
	__u32 m03;
	__u16 m45;
	__builtin_memcpy(&m03, &eth->src[0], 4);
	__builtin_memcpy(&m45, &eth->src[4], 2);
	u->w[1] = m03 | (__u64)m45 << 32;
	u->w[2] = 0;
	return 1;
}

/*
 * deny_frame counts a frame dropped at now from denied source k, found
 * at d. A flood from one source spread over the receive queues would have
 * every CPU write the entry's frames, and each write would wait for the
 * line to come back from the CPU before (BENCHMARKS.md, "One denied
 * source on two CPUs"). So each CPU counts the frames of one denied
 * source in deny_pending, and adds them to the entry's every
 * CAC_DENY_PENDING_MAX; the daemon adds what is pending when it reads the
 * table. Other sources' frames are added to their entries as they come.
 * The CPU's count moves to another source once its own has been quiet
 * for CAC_DENY_PENDING_IDLE_NS, and what it held goes to the quiet
 * source's entry: a flood from many sources at once leaves it where it
 * is rather than moving it, with a lookup, at every frame. A count is zeroed before it
 * is added, so a read between the two misses it rather than counting it
 * twice, until the next read.
 */
static __always_inline void deny_frame(union deny_key_words *k, struct cac_denied *d, __u64 now)
{
	__u32 zero = 0;
	struct cac_deny_pending *p = bpf_map_lookup_elem(&deny_pending, &zero);
	if (!p) {
		__sync_fetch_and_add(&d->frames, 1);
		return;
	}
	union deny_key_words *pk = (union deny_key_words *)&p->key;
	if (pk->w[0] == k->w[0] && pk->w[1] == k->w[1] && pk->w[2] == k->w[2] &&
	    p->since_ns == d->since_ns) {
		p->last_ns = now;
		__u64 n = p->frames + 1;
		if (n < CAC_DENY_PENDING_MAX) {
			p->frames = n;
			return;
		}
		p->frames = 0;
		__sync_fetch_and_add(&d->frames, n);
		return;
	}
	__sync_fetch_and_add(&d->frames, 1);
	__u64 n = p->frames;
	if (n && now - p->last_ns < CAC_DENY_PENDING_IDLE_NS)
		return;
	/* The last source's frames go to its entry, if that is still the
	 * same denial (not released and denied again). */
	p->frames = 0;
	if (n) {
		struct cac_denied *o = bpf_map_lookup_elem(&denied, &p->key);
		if (o && o->since_ns == p->since_ns)
			__sync_fetch_and_add(&o->frames, n);
	}
	pk->w[0] = k->w[0];
	pk->w[1] = k->w[1];
	pk->w[2] = k->w[2];
	p->since_ns = d->since_ns;
	p->last_ns = now;
}

/*
 * access_check returns CAC_ACCESS_DENY or CAC_ACCESS_AUTO for a frame
 * whose source is denied, else CAC_ACCESS_NONE; where packs l3off and
 * family (0: PPPoE). A global function: the classifier's paths reach
 * it as one, and the verifier walks it once. The deny table is read,
 * never written but for the frames a denial dropped, and those mostly
 * in a count of the CPU's own (deny_frame).
 */
__noinline int access_check(struct xdp_md *ctx, __u64 where, __u32 policy)
{
	if (!ctx)
		return CAC_ACCESS_NONE;
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.l3off = where_l3off(where),
		.family = where_family(where),
	};
	if (policy & POLICY_ACCESS_LISTS) {
		__u32 v = list_of(&f);
		if (v == CAC_ACCESS_DENY)
			return CAC_ACCESS_DENY;
		if (v == CAC_ACCESS_ALLOW)
			return CAC_ACCESS_NONE;
	}
	if (!(policy & POLICY_AUTO_DENY))
		return CAC_ACCESS_NONE;
	__u32 zero = 0;
	struct cac_access_settings *as = bpf_map_lookup_elem(&access_settings, &zero);
	union deny_key_words k;
	if (!as || !deny_key_of(&f, as, &k))
		return CAC_ACCESS_NONE;
	struct cac_denied *d = bpf_map_lookup_elem(&denied, &k.k);
	/* Past its until, a source is released: the daemon takes it out
	 * and records it, but the fast path does not wait for that. */
	if (!d)
		return CAC_ACCESS_NONE;
	__u64 now = now_ns();
	if (now >= d->until_ns)
		return CAC_ACCESS_NONE;
	deny_frame(&k, d, now);
	return CAC_ACCESS_AUTO;
}

/* counts_for_deny reports whether a refusal for reason is the source's
 * own doing, which auto-deny counts: its per-source bucket, its account
 * or its malformed frames. A refusal by a level strangers share (class,
 * environment, call admission, a session agent's, a customer's) says
 * the box is busy, not that this source abuses it: counted, one flood
 * would get every honest caller denied. */
static __always_inline int counts_for_deny(__u32 reason)
{
	return reason == CAC_REASON_SOURCE || reason == CAC_REASON_ACCOUNT || reason == CAC_REASON_MALFORMED;
}

/*
 * deny_count counts a refusal of a frame's source at now, and denies the
 * source once it has refused refusals in the window: CAC_DENY_SLOTS
 * slots of slot_ns each, the newest the one now falls in. where packs
 * l3off and family, as access_check's. Agents and allowed sources are not
 * counted. A global function, called once a refusal is decided.
 */
__noinline int deny_count(struct xdp_md *ctx, __u64 where, __u64 now, __u32 policy)
{
	if (!ctx)
		return 0;
	__u32 zero = 0;
	struct cac_access_settings *as = bpf_map_lookup_elem(&access_settings, &zero);
	if (!as || !as->slot_ns || !as->refused)
		return 0;
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.l3off = where_l3off(where),
		.family = where_family(where),
	};
	if ((policy & POLICY_ACCESS_LISTS) && list_of(&f) == CAC_ACCESS_ALLOW)
		return 0;
	if (agent_of(&f) != NO_AGENT)
		return 0;
	union deny_key_words k;
	if (!deny_key_of(&f, as, &k))
		return 0;
	__u64 tick = now / as->slot_ns;
	__u32 sum = 1;
	struct cac_deny_count *c = bpf_map_lookup_elem(&deny_counts, &k.k);
	if (!c) {
		struct cac_deny_count n = {.tick = tick};
		n.slot[tick % CAC_DENY_SLOTS] = 1;
		if (sum < as->refused) {
			bpf_map_update_elem(&deny_counts, &k.k, &n, BPF_NOEXIST);
			return 0;
		}
	} else {
		/* Slots the window left since the last refusal are emptied;
		 * a refusal from before the newest (another CPU's, a moment
		 * behind) counts in the newest. */
		__u64 last = c->tick;
		if (tick > last) {
			__u64 gone = tick - last;
#pragma unroll
			for (__u32 i = 1; i <= CAC_DENY_SLOTS; i++) {
				if (i <= gone)
					c->slot[(last + i) % CAC_DENY_SLOTS] = 0;
			}
			c->tick = tick;
		} else {
			tick = last;
		}
		c->slot[tick % CAC_DENY_SLOTS]++;
		sum = 0;
#pragma unroll
		for (__u32 i = 0; i < CAC_DENY_SLOTS; i++)
			sum += c->slot[i];
		if (sum < as->refused)
			return 0;
		bpf_map_delete_elem(&deny_counts, &k.k);
	}
	struct cac_denied d = {.since_ns = now, .until_ns = now + as->deny_for_ns, .refusals = sum};
	if (bpf_map_update_elem(&denied, &k.k, &d, BPF_ANY) == 0) {
		struct cac_stats *st = bpf_map_lookup_elem(&stats, &zero);
		if (st)
			st->deny_added++;
	}
	return 0;
}
