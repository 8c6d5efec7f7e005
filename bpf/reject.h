/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reject records (DESIGN.md §5): every reject is counted against its
 * source, class and reason for the current second in an LRU table that
 * `cacctl show rejects` reads; when a key's second is over and it rejects
 * again, the finished second goes out on a ring buffer for the daemon. So
 * at most one record per source, class and reason and second leaves the
 * kernel, carrying the count it stands for; a flood from one source costs
 * a lookup and an atomic add per packet.
 */
#pragma once

#include "source.h"
#include "counters.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct cac_reject_key);
	__type(value, struct cac_reject);
} rejects SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} reject_events SEC(".maps");

/*
 * New records per CPU per second. A flood from spoofed sources would
 * otherwise insert a record per packet and churn the table. Once a CPU has
 * made this many in a second, every further reject it sees in that second
 * is counted in one record whose source is "other sources" (family
 * CAC_SOURCE_OTHERS), without looking for its own: the counts still add
 * up, and a spoofed flood costs what a single-source one does.
 */
#define REJECT_NEW_PER_SECOND 1024
#define CAC_SOURCE_OTHERS 0xff

struct reject_budget {
	__u64 second;
	__u64 used;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reject_budget);
} reject_budget SEC(".maps");

/* this_cpu_budget returns this CPU's new-record budget for the second. */
static __always_inline struct reject_budget *this_cpu_budget(__u64 second)
{
	__u32 zero = 0;
	struct reject_budget *b = bpf_map_lookup_elem(&reject_budget, &zero);
	if (b && b->second != second) {
		b->second = second;
		b->used = 0;
	}
	return b;
}

/* What a record names as the source: everything the frame says. */
static const struct cac_class_limits full_source = {
	.source_key = CAC_SOURCE_MAC_VLAN,
	.ipv6_prefix = 128,
};

static __always_inline void record_reject(struct xdp_md *ctx, struct frame *f, __u32 class,
					  int reason, __u64 now)
{
	struct cac_reject_key key = {};
	struct cac_class_limits fs = full_source;
	if (!source_of(f, class, &fs, &key.source))
		return;
	key.reason = reason;
	__u64 second = now / 1000000000ULL;

	struct reject_budget *budget = this_cpu_budget(second);
	if (!budget)
		return;
	struct cac_reject *r = NULL;
	int fresh = 0;
	if (budget->used < REJECT_NEW_PER_SECOND) {
		r = bpf_map_lookup_elem(&rejects, &key);
		if (!r) {
			budget->used++; /* a new record follows below */
			fresh = 1;
		}
	}
	if (!r && !fresh) {
		/* Out of new records this second: count it with other sources. */
		__builtin_memset(&key.source, 0, sizeof(key.source));
		key.source.class = class;
		key.source.family = CAC_SOURCE_OTHERS;
		r = bpf_map_lookup_elem(&rejects, &key);
	}
	if (r) {
		__u64 last = r->second;
		if (last != second &&
		    __sync_val_compare_and_swap(&r->second, last, second) == last) {
			/* This CPU closed the key's last second: send it on. The
			 * exchange keeps every count, whoever added it. */
			__u64 count = __sync_lock_test_and_set(&r->count, 1);
			struct cac_reject_event *ev =
				bpf_ringbuf_reserve(&reject_events, sizeof(*ev), 0);
			if (ev) {
				ev->key = key;
				ev->rec = *r;
				ev->rec.second = last;
				ev->rec.count = count;
				bpf_ringbuf_submit(ev, 0);
			} else {
				lost_reject_record();
			}
			r->first_ns = now;
		} else {
			__sync_fetch_and_add(&r->count, 1);
		}
		r->last_ns = now;
		return;
	}
	struct cac_reject rec = {
		.second = second,
		.count = 1,
		.first_ns = now,
		.last_ns = now,
		.ifindex = ctx->ingress_ifindex,
	};
	bpf_map_update_elem(&rejects, &key, &rec, BPF_NOEXIST);
}
