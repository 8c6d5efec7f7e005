/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fleet-scope levels spend a lease instead of a bucket (docs/design.md,
 * "Fleet"): the daemon holds tokens granted by the fleet's GCRA in Redis,
 * and a call here takes one of them or is refused. The fleet's rate lives
 * in Redis; this side only counts, so it can never admit more than was
 * granted. internal/model/admission is the same arithmetic in Go.
 */
#pragma once

#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "bucket.h"
#include "clock.h"

/* lease_live reports whether the tokens of ls may be spent at now: the
 * newest grant's lifetime has not ended. */
static __always_inline int lease_live(struct cac_lease *ls, __u64 now)
{
	return now < *(volatile __u64 *)&ls->expires_ns;
}

/* lease_step is level_step for a fleet-scope level (step and now as
 * there): it checks for a token, takes one, or gives one back. A take
 * that finds none gives it straight back, so a refusal leaves the count
 * as it found it, and every admitted call had a token of its own. Tokens
 * past the lease's lifetime are none. A refusal counts as demand. A lease
 * the map lacks refuses: the fast path never opens up. */
static __always_inline int lease_step(__u64 index, __u32 step, __u64 now)
{
	__u32 i = index;
	struct cac_lease *ls = bpf_map_lookup_elem(&leases, &i);
	if (!ls || index >= CAC_MAX_LEASES)
		return 0;
	switch (step) {
	case STEP_CONFORMS:
		if (lease_live(ls, now) && *(volatile __s64 *)&ls->tokens > 0)
			return 1;
		break;
	case STEP_TAKE:
		if (!lease_live(ls, now))
			break;
		if (__sync_fetch_and_add(&ls->tokens, -1) > 0)
			return 1;
		__sync_fetch_and_add(&ls->tokens, 1);
		break;
	default: /* STEP_GIVE_BACK */
		__sync_fetch_and_add(&ls->tokens, 1);
		return 1;
	}
	/* Demand, not accounting: a lost count only sizes a lease a call
	 * smaller, so no atomic on the refusal path. */
	ls->short_calls++;
	return 0;
}

/* lease_take_n takes n tokens of lease i at once, or none: the call
 * admission limit's lease, which a call spends its charge times its
 * lifetime of. Tokens past the lease's lifetime are none. A refusal
 * counts its n as demand. */
static __always_inline int lease_take_n(__u32 i, __u64 n)
{
	struct cac_lease *ls = bpf_map_lookup_elem(&leases, &i);
	if (!ls)
		return 0;
	if (!lease_live(ls, now_ns())) {
		ls->short_calls += n;
		return 0;
	}
	if (__sync_fetch_and_add(&ls->tokens, -(__s64)n) >= (__s64)n)
		return 1;
	__sync_fetch_and_add(&ls->tokens, (__s64)n);
	ls->short_calls += n;
	return 0;
}

/* lease_put_n gives back what lease_take_n took. */
__noinline int lease_put_n(__u32 i, __u64 n)
{
	struct cac_lease *ls = bpf_map_lookup_elem(&leases, &i);
	if (ls)
		__sync_fetch_and_add(&ls->tokens, (__s64)n);
	return 0;
}
