/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Counters and the one exit every watched frame takes. Counters are per CPU
 * and plain increments: no atomics, no shared cache lines. Unwatched
 * traffic never gets here, so it writes nothing.
 */
#pragma once

#include "bpf_helpers.h"
#include "parse.h"
#include "admit.h"

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

/* verdict admits or rejects a first packet, counts every watched frame,
 * and returns what XDP does with it. */
static __always_inline int verdict(struct frame *f, int result)
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
		int reason = admit(f, class);
		if (reason == ADMITTED) {
			st->classes[class].admitted++;
			return XDP_PASS;
		}
		if (reason >= 0 && reason < CAC_NUM_REASONS)
			st->classes[class].rejected[reason]++;
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
