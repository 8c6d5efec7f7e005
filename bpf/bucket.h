/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Token buckets with FlySIP semantics, kept as GCRA: one 64-bit theoretical
 * arrival time (TAT) per bucket, advanced with compare-and-swap. A call at
 * now conforms when TAT <= now + tolerance, and then moves TAT to
 * max(TAT, now) + interval. There is no elapsed-time subtraction, so
 * nothing can underflow; the control plane caps interval and tolerance so
 * that nothing overflows. cac/bucket is the same arithmetic in Go.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "clock.h"

/*
 * Limits are written by the control plane in two slots: it fills the slot
 * not in use, then switches policy_slot (one aligned word), so the fast path
 * sees the old limits or the new, never a mix. The writer then waits before
 * it may write that old slot again, for programs still reading it. The same
 * word says which classes any level limits (POLICY_LIMITED), so a class with
 * no limit costs one lookup.
 */
#define POLICY_LIMITED(class) ((__u32)POLICY_LIMITED_FIRST << (class))

/* bucket_normalize brings a TAT back to one interval past a full tolerance.
 * In steady operation it never is further ahead; after an apply shrank the
 * bucket, this makes it refill at its new rate instead of serving out the
 * old backlog. It takes nothing: an empty bucket stays empty.
 *
 * The caller's now may be older than a TAT another CPU has just written
 * from a later clock (a clock tick between the two reads, or a stall):
 * measured against it, a drained bucket would look over-full, and pulling
 * its TAT back would free calls that were never due. So the clock is read
 * again, after the TAT, before anything is pulled back; only this rare
 * path pays for the read. */
static __always_inline void bucket_normalize(struct cac_limit *l, struct cac_bucket *b, __u64 now)
{
	__u64 tat = b->tat_ns;
	if (tat <= now + l->tolerance_ns + l->interval_ns)
		return;
	barrier_var(tat); /* the clock is read after the TAT */
	__u64 ceiling = now_ns() + l->tolerance_ns + l->interval_ns;
	if (tat > ceiling)
		__sync_val_compare_and_swap(&b->tat_ns, tat, ceiling);
}

/* tolerance_of is the tolerance a call has: the limit's, less the reserve
 * a stranger's call must leave. */
static __always_inline __u64 tolerance_of(struct cac_limit *l, __u64 reserve)
{
	return reserve < l->tolerance_ns ? l->tolerance_ns - reserve : 0;
}

/* bucket_conforms reports whether a call at now would pass, leaving
 * reserve (ns) of the tolerance; it takes nothing. A zero limit is
 * unlimited. */
static __always_inline int bucket_conforms(struct cac_limit *l, struct cac_bucket *b, __u64 now,
					   __u64 reserve)
{
	if (!l->interval_ns)
		return 1;
	bucket_normalize(l, b, now);
	return b->tat_ns <= now + tolerance_of(l, reserve);
}

/* What level_step (admit.h) does with a level's bucket or lease. */
enum { STEP_CONFORMS, STEP_TAKE, STEP_GIVE_BACK };

/* How often bucket_take tries compare-and-swap before it adds. */
#define BUCKET_CAS_TRIES 8

/*
 * bucket_take takes one call's worth if the call still conforms: the TAT
 * moves from where it is (now, for an idle bucket) one interval on, with
 * compare-and-swap, again from what another CPU wrote if it lost the
 * race. A refused call writes nothing, so no other CPU ever sees a TAT
 * that a refusal is about to take back: bucket_normalize would pull such
 * a TAT to its ceiling, and the refusal's give-back would then free a
 * call that was never due. Only a call that lost BUCKET_CAS_TRIES races
 * in a row advances with an atomic add, and gives the interval back if it
 * no longer conforms; so a call that conforms is never refused because
 * other CPUs were busy on the bucket.
 */
static __always_inline int bucket_take(struct cac_limit *l, struct cac_bucket *b, __u64 now,
				       __u64 reserve)
{
	if (!l->interval_ns)
		return 1;
	__u64 interval = l->interval_ns, tolerance = tolerance_of(l, reserve);
	__u64 tat = b->tat_ns;
#pragma unroll
	for (int i = 0; i < BUCKET_CAS_TRIES; i++) {
		if (tat > now + tolerance)
			return 0;
		__u64 next = (tat < now ? now : tat) + interval;
		__u64 seen = __sync_val_compare_and_swap(&b->tat_ns, tat, next);
		if (seen == tat)
			return 1;
		tat = seen;
	}
	__u64 old = __sync_fetch_and_add(&b->tat_ns, interval);
	if (old <= now + tolerance)
		return 1;
	__sync_fetch_and_sub(&b->tat_ns, interval);
	return 0;
}

/* bucket_give_back returns a call taken by bucket_take, when a later level
 * rejects it: GCRA is additive, so moving TAT back one interval is exact
 * (a TAT that falls behind now means the same as now). */
static __always_inline void bucket_give_back(struct cac_limit *l, struct cac_bucket *b)
{
	if (l->interval_ns)
		__sync_fetch_and_sub(&b->tat_ns, l->interval_ns);
}
