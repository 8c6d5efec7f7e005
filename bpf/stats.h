/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Counters and the one exit every watched frame takes: a first packet goes
 * through admission here. Counters are per CPU and plain increments: no
 * atomics, no shared cache lines. Unwatched traffic never gets here, so it
 * writes nothing.
 */
#pragma once

#include "bpf_helpers.h"
#include "parse.h"
#include "admit.h"
#include "reject.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_settings);
} settings SEC(".maps");

/*
 * admit_call admits or rejects one first packet and records a reject. It
 * is a global function, so the verifier checks the admission pipeline once
 * instead of once for every way through the parsers; where packs the
 * class, where the source is and the slot of limits in force (a BPF
 * function has five arguments).
 */
__noinline int admit_call(struct xdp_md *ctx, __u64 where)
{
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.len = ctx->data_end - ctx->data,
		.l3off = (where >> 8) & 0xffff,
		.vlans = (where >> 24) & 0xff,
		.family = (where >> 32) & 0xff,
	};
	__u32 class = where & 0xff;
	__u64 now = 0;
	int reason = admit(&f, class, (where >> 40) & POLICY_SLOT, &now);
	if (reason != ADMITTED)
		record_reject(ctx, &f, class, reason, now);
	return reason;
}

/* verdict admits or rejects a first packet, counts every watched frame,
 * and returns what XDP does with it. */
static __always_inline int verdict(struct xdp_md *ctx, struct frame *f, int result)
{
	__u32 zero = 0;
	struct cac_stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_PASS;

	int class = RESULT_CLASS(result);
	switch (RESULT_KIND(result)) {
	case CAC_KIND_CLASS: {
		if (class >= CAC_NUM_CLASSES)
			return XDP_PASS;
		int reason = ADMITTED;
		__u32 policy = policy_word();
		if (policy & POLICY_LIMITED(class)) {
			__u64 where = class | (__u64)f->l3off << 8 | (__u64)f->vlans << 24 |
				      (__u64)f->family << 32 | (__u64)(policy & POLICY_SLOT) << 40;
			reason = admit_call(ctx, where);
		}
		if (reason == ADMITTED) {
			st->classes[class].admitted++;
			return XDP_PASS;
		}
		__u32 r = reason;
		barrier_var(r); /* bound the register that indexes */
		if (r < CAC_NUM_REASONS)
			st->classes[class].rejected[r]++;
		return XDP_DROP;
	}
	case CAC_KIND_INDIALOG:
		st->sip_indialog++;
		return XDP_PASS;
	case CAC_KIND_FRAGMENT:
		st->fragment++;
		return XDP_PASS;
	case CAC_KIND_MALFORMED: {
		st->malformed++;
		struct cac_settings *set = bpf_map_lookup_elem(&settings, &zero);
		return set && set->malformed_drop ? XDP_DROP : XDP_PASS;
	}
	default:
		st->passed_other++;
		return XDP_PASS;
	}
}
