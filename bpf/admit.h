/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The admission pipeline (docs/design.md, "Admission"), in its order:
 * capacity, an INVITE's sessions of an account's and a customer's
 * max-sessions (sessions.h, before admit_call); the call admission gates
 * (stale, cpu-limit, buffers); the buckets of source, account, customer,
 * agent, class and environment; the charge budget (session-charges or
 * total-charge). The first level that fails names the reason, and a
 * rejected call consumes nothing at any level: every level is checked
 * before any is taken, and a take that loses a race to another CPU gives
 * back what was taken before it (a call a level after capacity refuses
 * gives its sessions back). A new source enters the
 * per-source table only when its call is admitted, so a flood of spoofed
 * sources cannot churn the table or evict the sources it knows.
 */
#pragma once

#include "maps.h"
#include "agent.h"
#include "bucket.h"
#include "charge.h"
#include "lease.h"
#include "clock.h"
#include "source.h"

#define EEXIST 17

/* A level that applies to this call: its limit and bucket. */
struct level {
	struct cac_limit *limit;
	struct cac_bucket *bucket;
};

/* The bucket levels in the order of docs/design.md, "Admission"; each
 * names the reason of its index. */
enum { L_SOURCE, L_ACCOUNT, L_CUSTOMER, L_AGENT, L_CLASS, L_ENVIRONMENT, L_COUNT };
_Static_assert(CAC_REASON_SOURCE + L_ENVIRONMENT == CAC_REASON_ENVIRONMENT &&
		       CAC_REASON_SOURCE + L_AGENT == CAC_REASON_AGENT,
	       "levels in the order of their reasons");
#define LEVEL_REASON(i) (CAC_REASON_SOURCE + (i))

/* policy_word reads policy_slot: the slot in force, and which classes any
 * level limits. A class with no limit costs this one lookup, with no call
 * and no clock. */
static __always_inline __u32 policy_word(void)
{
	__u32 zero = 0;
	__u32 *s = bpf_map_lookup_elem(&policy_slot, &zero);
	return s ? *s : 0;
}

/*
 * level_step checks, takes from or gives back to one level's bucket, or
 * its lease if it is fleet-scope (lease.h: no reserve applies); a
 * level that does not apply (a null limit or bucket) always passes. A
 * global function: admission hands it pointers without testing them, so
 * the verifier follows one path through admission for any mix of levels
 * instead of one for each, and checks the bucket arithmetic once.
 */
__noinline int level_step(struct cac_limit *l, struct cac_bucket *b, __u64 now, __u32 step,
			  __u64 reserve)
{
	if (!l || !b)
		return 1;
	if (l->interval_ns == CAC_LEASE_INTERVAL)
		return lease_step(l->tolerance_ns, step, now);
	switch (step) {
	case STEP_CONFORMS:
		return bucket_conforms(l, b, now, reserve);
	case STEP_TAKE:
		return bucket_take(l, b, now, reserve);
	default:
		bucket_give_back(l, b);
		return 1;
	}
}

/* give_back returns what the first n levels took, of the levels in force
 * (a bit each, by index). */
static __always_inline void give_back(struct level *lv, __u32 in, int n)
{
#pragma unroll
	for (int j = 0; j < L_COUNT; j++) {
		if (j < n && (in & 1 << j))
			level_step(lv[j].limit, lv[j].bucket, 0, STEP_GIVE_BACK, 0);
	}
}

/* admit returns ADMITTED or the reason for a call of class under the
 * limits of slot at now. */
static __always_inline int admit(struct xdp_md *ctx, struct frame *f, __u32 class, __u32 slot, int with_agents,
				 int with_user, __u64 now)
{
	__u32 zero = 0;
	struct cac_limits *lim = bpf_map_lookup_elem(&limits, &slot);
	if (!lim || class >= CAC_NUM_CLASSES)
		return ADMITTED;
	struct cac_class_limits *cls = &lim->classes[class];
	int per_source = cls->per_source.interval_ns != 0;
	/* Malformed frames are held by their own two buckets alone: no
	 * account, agent or shared level is theirs. In-dialog requests
	 * are held by theirs, which a known source (account or agent) skips. */
	int malformed = class == CAC_CLASS_MALFORMED;
	int indialog = class == CAC_CLASS_SIP_INDIALOG;
	int by_account = lim->accounts && f->family && !malformed;
	struct cac_buckets *bk = bpf_map_lookup_elem(&buckets, &zero);
	if (!bk)
		return ADMITTED;

	/* A known SIP peer is held by its agent's bucket instead of an
	 * automatic one; its request is stamped whatever the verdict, even a
	 * gate's. */
	__u32 agent = NO_AGENT;
	if (with_agents && ((class >= CAC_CLASS_SIP_INVITE && class <= CAC_CLASS_SIP_INDIALOG) ||
			    class == CAC_CLASS_SIP_CONNECT))
		agent = agent_at(ctx, f->l3off, f->family);
	if (agent >= lim->agents) /* an address left over from agents gone */
		agent = NO_AGENT;
	if (agent != NO_AGENT) {
		agent_saw(agent, now);
		/* An agent's in-dialog requests are never held. */
		if (indialog)
			return ADMITTED;
	}

	/* Call admission applies to calls (PPPoE, L2TP, sip-invite) once
	 * a limit makes it operational; its gates come before any bucket. */
	struct cac_admission *ca = &lim->cac;
	int charged = ca->limit_milli && call_type_of(class) >= 0;
	struct measured m = {};
	if (charged) {
		int r = cac_gates(ca, now, &m);
		if (r != ADMITTED)
			return r;
	}

	struct level lv[L_COUNT] = {
		[L_CLASS] = {&lim->level[class], &bk->level[class]},
	};
	/* The levels that may apply, a bit each: level_step would pass the
	 * others, at the price of a call each (a refused PADI of a class
	 * limit made five calls, three for levels that do not apply). A
	 * scalar, so testing it forks no pointer's state for the verifier. */
	__u32 in = 1 << L_CLASS;
	/* Above them, in the same word for want of stack: the source is not
	 * in the per-source table. */
#define NEW_SOURCE (1 << L_COUNT)
	if (!malformed && !indialog) {
		lv[L_ENVIRONMENT] = (struct level){&lim->level[CAC_LEVEL_ENVIRONMENT],
						   &bk->level[CAC_LEVEL_ENVIRONMENT]};
		in |= 1 << L_ENVIRONMENT;
	}
	/* Trusted first: a stranger's call leaves the reserve of the shared
	 * levels to the session agents, whose calls may take it. */
	__u64 class_reserve = 0, env_reserve = 0;
	if (agent == NO_AGENT) {
		class_reserve = lim->reserve_ns[class];
		env_reserve = lim->reserve_ns[CAC_LEVEL_ENVIRONMENT];
	}
#define RESERVE(i) ((i) == L_CLASS ? class_reserve : (i) == L_ENVIRONMENT ? env_reserve : 0)

	/* A source in an account is held by the account's bucket instead
	 * of an automatic one, and never enters the per-source table. */
	struct cac_account *acct = NULL;
	/* An authentication rule's account, which user_account found before
	 * admit_call (sip_user.h), comes before the source prefix's
	 * (docs/design.md, "Authentication rules"). */
	if (with_user) {
		struct cac_user_scratch *us = bpf_map_lookup_elem(&user_scratch, &zero);
		if (us)
			acct = &us->account;
	}
	if (by_account && !acct) {
		union prefix_words p;
		prefix_of(f, &p);
		acct = slot ? bpf_map_lookup_elem(&accounts1, &p.p) : bpf_map_lookup_elem(&accounts0, &p.p);
	}
	if (acct && !indialog) {
		__u32 a = acct->account, c = acct->customer;
		__u32 al = slot * CAC_MAX_ACCOUNTS + a, cl = slot * CAC_MAX_CUSTOMERS + c;
		lv[L_ACCOUNT].limit = bpf_map_lookup_elem(&account_limits, &al);
		lv[L_ACCOUNT].bucket = bpf_map_lookup_elem(&account_buckets, &a);
		lv[L_CUSTOMER].limit = bpf_map_lookup_elem(&customer_limits, &cl);
		lv[L_CUSTOMER].bucket = bpf_map_lookup_elem(&customer_buckets, &c);
		in |= 1 << L_ACCOUNT | 1 << L_CUSTOMER;
	}

	/* An agent's own bucket holds its requests, not its connections. */
	if (agent != NO_AGENT && class != CAC_CLASS_SIP_CONNECT) { /* never in-dialog: that returned above */
		__u32 al = slot * CAC_MAX_AGENTS + agent;
		struct cac_agent *ag = bpf_map_lookup_elem(&agent_limits, &al);
		lv[L_AGENT].limit = (void *)ag; /* the limit is its first member */
		lv[L_AGENT].bucket = bpf_map_lookup_elem(&agent_buckets, &agent);
		in |= 1 << L_AGENT;
	}

	/* The per-source table is looked up, never filled, before the
	 * verdict: a source it does not know has a full bucket. */
	union source_words src; /* aligned for source_store */
	if (per_source && !acct && agent == NO_AGENT && source_of(f, class, cls, &src.s)) {
		lv[L_SOURCE].limit = &cls->per_source;
		lv[L_SOURCE].bucket = bpf_map_lookup_elem(&sources, &src);
		in |= 1 << L_SOURCE;
		if (!lv[L_SOURCE].bucket)
			in |= NEW_SOURCE;
	}

#pragma unroll
	for (int i = 0; i < L_COUNT; i++) {
		if ((in & 1 << i) && !level_step(lv[i].limit, lv[i].bucket, now, STEP_CONFORMS, RESERVE(i)))
			return LEVEL_REASON(i);
	}
	/* The charge budget is checked with the buckets, before anything is
	 * taken, and committed after them. */
	struct charge_check cc = {.mine = CAC_NUM_CALL_TYPES};
	if (charged) {
		/* The snapshots of the ticks gone by first. Called from here,
		 * not from charge_conforms, so that no call chain is four
		 * frames deep under admit_call: 6.1's verifier counts each
		 * frame rounded up to 32 bytes, and the 512 bytes of stack
		 * would not hold it. The charge goes along and charge_advance
		 * skips a type without one: a condition here would fork the
		 * verifier's walk of all that follows. */
#pragma unroll
		for (__u32 t = 0; t < CAC_NUM_CALL_TYPES; t++)
			charge_advance(t, now / CAC_TICK_NS, ca->type[t].charge);
		int r = charge_conforms(ca, &m, class, now, &cc);
		if (r != ADMITTED)
			return r;
	}
	int taken = L_COUNT, reason = ADMITTED;
#pragma unroll
	for (int i = 0; i < L_COUNT; i++) {
		if ((in & 1 << i) && !level_step(lv[i].limit, lv[i].bucket, now, STEP_TAKE, RESERVE(i))) {
			taken = i;
			reason = LEVEL_REASON(i);
			break;
		}
	}
	if (reason != ADMITTED) {
		give_back(lv, in, taken); /* another CPU got there first */
		return reason;
	}
	if (charged) {
		reason = charge_commit(ca, &cc);
		if (reason != ADMITTED) {
			give_back(lv, in, L_COUNT);
			return reason;
		}

	}
	if (in & NEW_SOURCE) {
		/* Admitted: the new source enters with one call taken. If another
		 * CPU entered it first, this call takes from that bucket. */
		struct cac_bucket b = {.tat_ns = now + cls->per_source.interval_ns};
		if (bpf_map_update_elem(&sources, &src, &b, BPF_NOEXIST) == -EEXIST) {
			struct cac_bucket *sb = bpf_map_lookup_elem(&sources, &src);
			if (sb && !bucket_take(&cls->per_source, sb, now, 0)) {
				give_back(lv, in, L_COUNT);
				charge_give_back(&cc);
				return CAC_REASON_SOURCE;
			}
		}
	}
	return ADMITTED;
}
