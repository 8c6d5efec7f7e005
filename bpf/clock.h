/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one place the program reads time. Tests load the program with
 * use_test_clock set and move time by writing test_clock from Go, so that
 * bucket tests are exact and fast; production reads the kernel's coarse
 * monotonic clock (kernel 5.11 or later).
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "maps.h"

/* Set before load; the verifier drops the branch not taken. */
volatile const __u8 use_test_clock = 0;

static __always_inline __u64 now_ns(void)
{
	if (use_test_clock) {
		__u32 zero = 0;
		__u64 *t = bpf_map_lookup_elem(&test_clock, &zero);
		return t ? *t : 0;
	}
	/* The coarse clock (one tick, 1 to 10 ms) costs a fraction of the
	 * precise one; GCRA only needs time not to run backwards, and refill
	 * over any span longer than a tick stays exact. */
	return bpf_ktime_get_coarse_ns();
}
