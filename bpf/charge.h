/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Cisco broadband call admission (docs/design.md "Admission"): the stale, CPU and buffer
 * gates that come before the buckets, and the charge budget that comes
 * after them. Each admitted call holds its type's charge for the type's
 * lifetime; the charges in force are counted per 100 ms tick from a
 * running total and a ring of snapshots of it, so a check reads a few
 * words and takes no lock. In Go: internal/model/admission, its ring in cac/policy.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "lease.h"

/* The measurements a check uses, after the on-stale rule. */
struct measured {
	__u64 load_milli;
	__u32 cpu_milli;
	__u32 buffers_full;
};

/* call_type_of maps a class to its call type, or -1 for a class that is
 * no call. A call is its first sign of life only: PADI, ICRQ, INVITE
 * (docs/design.md "Admission"); a PADR or an SCCRQ meets its buckets but
 * not the gates and charges, so a session admitted at its PADI is never
 * refused at its PADR. cac.CallTypeOf is the same table in Go. */
static __always_inline int call_type_of(__u32 class)
{
	switch (class) {
	case CAC_CLASS_PPPOE_PADI:
		return CAC_CALL_PPPOE;
	case CAC_CLASS_L2TP_ICRQ:
		return CAC_CALL_VPDN;
	case CAC_CLASS_SIP_INVITE:
		return CAC_CALL_SIP;
	}
	return -1;
}

/*
 * cac_gates applies the checks that come before any bucket: a stale
 * control plane (reason stale when on-stale is closed), then in the new
 * model the CPU gate and full buffers. It fills *m for the charge check.
 * Like the charge functions below it is a global function: the verifier
 * checks its branches once, not once for every way through admission.
 */
__noinline int cac_gates(struct cac_admission *ca, __u64 now, struct measured *m)
{
	if (!ca || !m) /* a global function's pointers may be null to the verifier */
		return ADMITTED;
	__u32 zero = 0;
	__u32 *s = bpf_map_lookup_elem(&inputs_slot, &zero);
	__u32 slot = s ? *s & 1 : 0;
	struct cac_inputs *in = bpf_map_lookup_elem(&inputs, &slot);
	if (!in)
		return ADMITTED;
	m->load_milli = in->load_milli;
	m->cpu_milli = in->cpu_milli;
	m->buffers_full = in->buffers_full;

	/* A heartbeat of 0 is no control plane at all (cacctl attach): its
	 * measurements are zero and cannot go stale. */
	__u64 beat = in->heartbeat_ns;
	if (beat && ca->stale_after_ns && now > beat + ca->stale_after_ns) {
		if (ca->on_stale == CAC_STALE_CLOSED)
			return CAC_REASON_STALE;
		if (ca->on_stale == CAC_STALE_OPEN) {
			m->load_milli = 0;
			m->cpu_milli = 0;
			m->buffers_full = 0;
		}
	}
	if (ca->new_model) {
		if (ca->cpu_limit_milli && m->cpu_milli >= ca->cpu_limit_milli)
			return CAC_REASON_CPU_LIMIT;
		if (m->buffers_full)
			return CAC_REASON_BUFFERS;
	}
	return ADMITTED;
}

/*
 * charge_advance writes the snapshots of the ticks since a type's ring was
 * last written, up to tick: the total stood still over them, since nothing
 * was admitted. Only the last CAC_MAX_LIFETIME_TICKS can be read, so an
 * idle ring costs at most that many stores once. When another CPU admits a
 * call of the new tick before this snapshot is written, that call is
 * counted as of the tick before and expires up to 100 ms early: the only
 * inexactness, and only with two CPUs at a tick boundary. A global
 * function, called by admit() for each call type: the verifier walks its
 * loop once.
 */
__noinline int charge_advance(__u32 type, __u64 tick, __u32 charge)
{
	/* A type without a charge line holds nothing: its ring is never read. */
	if (!charge)
		return 0;
	struct cac_charge_ring *r = bpf_map_lookup_elem(&charge_rings, &type);
	if (!r)
		return 0;
	__u64 last = r->tick;
	if (tick <= last)
		return 0;
	__u64 gap = tick - last, total = r->total;
	for (__u32 i = 0; i < CAC_MAX_LIFETIME_TICKS; i++) {
		if (i >= gap)
			break;
		r->snap[(tick - i) & (CAC_RING - 1)] = total;
	}
	/* Publish only after the snapshots: a reader that sees the new tick
	 * finds them written. The swap fails, and leaves the tick alone, when
	 * another CPU has moved it on meanwhile. */
	__sync_val_compare_and_swap(&r->tick, last, tick);
	return 0;
}

/* A charge check: what it read, for the commit to build on. Only
 * scalars: a global function's memory argument cannot carry pointers. */
struct charge_check {
	__u64 mine_total; /* the call's type's total as the check read it */
	__u64 used;       /* charges counted against the limit */
	__u64 charge;     /* the call's own, thousandths; 0: it holds nothing */
	__u32 mine;       /* the call's type, or CAC_NUM_CALL_TYPES */
	int reason;       /* session-charges or total-charge */
};

/*
 * charge_conforms checks a call of class against the charge budget without
 * taking anything: old model, session charges + load + this call's charge
 * within the limit, full buffers rejecting everything; new model, session
 * charges + this call's charge within the limit. It comes before any
 * bucket is taken, so a flood the budget rejects touches no bucket.
 */
__noinline int charge_conforms(struct cac_admission *ca, struct measured *m, __u32 class, __u64 now,
			       struct charge_check *cc)
{
	if (!ca || !m || !cc)
		return ADMITTED;
	cc->mine = CAC_NUM_CALL_TYPES;
	cc->charge = 0;
	cc->reason = ca->new_model ? CAC_REASON_SESSION_CHARGES : CAC_REASON_TOTAL_CHARGE;
	if (!ca->new_model && m->buffers_full)
		return cc->reason;
	__u64 tick = now / CAC_TICK_NS;
	int type = call_type_of(class);
	cc->used = ca->new_model ? 0 : m->load_milli;

	for (__u32 t = 0; t < CAC_NUM_CALL_TYPES; t++) {
		struct cac_charge *c = &ca->type[t];
		__u32 lifetime = c->lifetime_ticks;
		if (!c->charge || !lifetime || lifetime > CAC_MAX_LIFETIME_TICKS)
			continue;
		__u32 key = t;
		struct cac_charge_ring *r = bpf_map_lookup_elem(&charge_rings, &key);
		if (!r)
			continue;
		/* admit() has advanced the ring to this tick (or another
		 * CPU to a later one): its snapshots up to tick are written. */
		/* One read of the total: the commit's recheck starts from it. */
		__u64 total = r->total, then = r->snap[(tick - lifetime + 1) & (CAC_RING - 1)];
		cc->used += (total > then ? total - then : 0) * c->charge * 1000;
		if (t == (__u32)type) {
			cc->mine = t;
			cc->mine_total = total;
			cc->charge = (__u64)c->charge * 1000;
		}
	}
	return cc->used + cc->charge > ca->limit_milli ? cc->reason : ADMITTED;
}

/* charge_cost is what a call of type t spends of a fleet-scope limit's
 * lease: its charge for each tick it is held. */
static __always_inline __u64 charge_cost(struct cac_admission *ca, __u32 t)
{
	if (t >= CAC_NUM_CALL_TYPES)
		return 0;
	return (__u64)ca->type[t].charge * ca->type[t].lifetime_ticks;
}

/*
 * charge_commit adds an admitted call to its type's total with an atomic
 * add. If calls of its type that other CPUs admitted since the check no
 * longer leave room for it, it takes itself out again and is rejected.
 */
__noinline int charge_commit(struct cac_admission *ca, struct charge_check *cc)
{
	if (!ca || !cc)
		return ADMITTED;
	__u64 limit_milli = ca->limit_milli;
	__u32 key = cc->mine;
	if (key >= CAC_NUM_CALL_TYPES)
		return ADMITTED; /* a call with no charge line holds nothing */
	struct cac_charge_ring *r = bpf_map_lookup_elem(&charge_rings, &key);
	if (!r)
		return ADMITTED;
	__u64 before = __sync_fetch_and_add(&r->total, 1);
	if (before > cc->mine_total && cc->used + (before - cc->mine_total) * cc->charge + cc->charge > limit_milli) {
		__sync_fetch_and_sub(&r->total, 1);
		return cc->reason;
	}
	/* A fleet-scope limit (docs/design.md, "Fleet"): the call spends
	 * its charge for each tick it is held of the fleet's lease too, or
	 * takes itself out again. used, no longer needed, keeps what it
	 * spent for charge_give_back. */
	cc->used = ca->fleet ? charge_cost(ca, key) : 0;
	if (cc->used && !lease_take_n(CAC_LEASE_CALL_ADMISSION, cc->used)) {
		__sync_fetch_and_sub(&r->total, 1);
		return cc->reason;
	}
	return ADMITTED;
}

/* charge_give_back takes back a committed call, when a race on a new
 * source rejects it after all, with what it spent of a fleet's lease
 * (lease_put_n is a global function: the key of its lookup sits in a
 * frame of its own, not in admission's, which has no stack to spare). */
static __always_inline int charge_give_back(struct charge_check *cc)
{
	__u32 key = cc->mine;
	if (key >= CAC_NUM_CALL_TYPES)
		return 0;
	struct cac_charge_ring *r = bpf_map_lookup_elem(&charge_rings, &key);
	if (r)
		__sync_fetch_and_sub(&r->total, 1);
	if (cc->used)
		lease_put_n(CAC_LEASE_CALL_ADMISSION, cc->used);
	return 0;
}
