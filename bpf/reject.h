/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reject records (docs/design.md, "Reject records"): every reject is
 * counted in the record of its source, class, reason and second, a key
 * that names the second it falls in, and the CPU that counts it. The fast
 * path only ever adds to the record of the second it read from the clock,
 * making it if it is not there; it never reads a count back nor resets
 * one. Each CPU has records of its own, so a flood from one source spread
 * over CPUs writes no line another CPU writes: a plain add per packet, no
 * atomic. A CPU keeps a record first in one of its slots (reject_slots),
 * chosen by a fold of the key, where a flood's next rejects find it
 * without the kernel's hash of the table; a record whose slot holds
 * another goes to the table (rejects). The daemon takes the records of
 * finished seconds out of the table (lookup and delete), reads those of
 * the slots and says so in reject_swept, merges the CPUs' records of one
 * key and writes them to its log, so nobody resets a count a CPU is
 * adding to, and a record never waits for its source to be rejected
 * again.
 */
#pragma once

#include "maps.h"
#include "source.h"
#include "stats.h"
#include "where.h"

/*
 * New records per CPU per second. A flood from spoofed sources would
 * otherwise insert a record per packet and churn the table. Once a CPU has
 * made this many in a second, every further reject it sees in that second
 * is counted in one record whose source is "other sources" (family
 * CAC_SOURCE_OTHERS), without looking for its own: the counts still add
 * up, and a spoofed flood costs what a single-source one does. It also
 * bounds the table: the daemon empties it of every second but the last
 * two, so it holds at most three seconds of each CPU's budget. Both
 * numbers are in shared.h.
 */

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

/* add_reject adds one reject to a record found in the table. Only this
 * CPU writes a record of its key, and a program runs to its end on its
 * CPU before the next starts there: a plain add loses nothing. */
static __always_inline void add_reject(struct cac_reject *r, __u64 now)
{
	r->count++;
	r->last_ns = now;
}

/*
 * new_record makes the record of the scratch's key with one reject in
 * it. It returns 0, or -1 when the table took the reject in no record.
 * The insert of a key of this CPU finds none there (no other CPU makes
 * one), so a refusal means a full table; should it find one all the
 * same, the reject is added to it rather than lost.
 */
static __always_inline int new_record(struct xdp_md *ctx, struct cac_reject_scratch *s, __u64 now)
{
	struct cac_reject *rec = &s->rec;
	rec->second = s->key.second;
	rec->count = 1;
	rec->first_ns = now;
	rec->last_ns = now;
	rec->ifindex = ctx->ingress_ifindex;
	if (bpf_map_update_elem(&rejects, &s->key, rec, BPF_NOEXIST) == 0)
		return 0;
	struct cac_reject *r = bpf_map_lookup_elem(&rejects, &s->key);
	if (!r)
		return -1;
	add_reject(r, now);
	return 0;
}

/* A reject key is REJECT_KEY_WORDS words, with no byte left unset. */
#define REJECT_KEY_WORDS (sizeof(struct cac_reject_key) / sizeof(__u32))
_Static_assert(sizeof(struct cac_reject_key) % sizeof(__u32) == 0, "a reject key is whole words");
/* The word of reason, rule and account, in that order from its low byte. */
#define REJECT_KEY_REASON_WORD (__builtin_offsetof(struct cac_reject_key, reason) / sizeof(__u32))
_Static_assert(__builtin_offsetof(struct cac_reject_key, reason) % sizeof(__u32) == 0 &&
		       __builtin_offsetof(struct cac_reject_key, rule) == __builtin_offsetof(struct cac_reject_key, reason) + 1 &&
		       __builtin_offsetof(struct cac_reject_key, account) == __builtin_offsetof(struct cac_reject_key, reason) + 2,
	       "reason, rule and account fill one word");

/* reject_slot_of is the slot of a key: each word multiplied by an odd
 * constant of its own, the products folded with xor, the middle bits of
 * the sum. No product waits for another, so the words are folded side by
 * side rather than one after the other, as a chain of multiplies would. */
static __always_inline __u32 reject_slot_of(struct cac_reject_key *key)
{
	__u32 *w = (__u32 *)key, h = 0;
#pragma unroll
	for (int i = 0; i < REJECT_KEY_WORDS; i++)
		h ^= w[i] * (0x9e3779b1 + 2 * i);
	return (h >> 16) & (CAC_REJECT_SLOTS - 1);
}

static __always_inline int same_reject_key(struct cac_reject_key *a, struct cac_reject_key *b)
{
	__u32 *x = (__u32 *)a, *y = (__u32 *)b, d = 0;
#pragma unroll
	for (int i = 0; i < REJECT_KEY_WORDS; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

/*
 * count_in_slot counts one reject of the scratch's key in its slot of this
 * CPU and returns 1; or returns 0 when the slot holds another record.
 * With make, a slot that is empty, or holds a second the daemon has read
 * (reject_swept), takes a new record of the key: what the daemon has not
 * read is never written over. A daemon that reads a slot while this
 * writes it sees the old second or the new, and takes neither: the old is
 * read already, the new not finished.
 */
static __always_inline int count_in_slot(struct xdp_md *ctx, struct cac_reject_scratch *s, __u64 now, int make)
{
	__u32 i = reject_slot_of(&s->key);
	struct cac_reject_scratch *slot = bpf_map_lookup_elem(&reject_slots, &i);
	if (!slot)
		return 0;
	if (slot->rec.count && same_reject_key(&slot->key, &s->key)) {
		add_reject(&slot->rec, now);
		return 1;
	}
	if (!make)
		return 0;
	if (slot->rec.count) {
		__u32 zero = 0;
		__u64 *swept = bpf_map_lookup_elem(&reject_swept, &zero);
		if (!swept || slot->rec.second > *swept)
			return 0;
	}
	slot->key = s->key;
	slot->rec.second = s->key.second;
	slot->rec.count = 1;
	slot->rec.first_ns = now;
	slot->rec.last_ns = now;
	slot->rec.ifindex = ctx->ingress_ifindex;
	return 1;
}

/* user_rule_found returns the kind of the authentication rule user_scratch
 * holds, and its account's index above the low byte. Inlined in
 * refused_again, which is verified once: a call of its own there would be
 * a fourth frame on the deepest chain, which 6.1 rounds to 32 bytes. */
static __always_inline __u32 user_rule_found(void)
{
	__u32 zero = 0;
	/* A policy without user rules names none, whatever a request judged
	 * under the one before left in the scratch after an apply emptied it. */
	__u32 *word = bpf_map_lookup_elem(&policy_slot, &zero);
	if (!word || !(*word & POLICY_USER_RULES))
		return 0;
	struct cac_user_scratch *us = bpf_map_lookup_elem(&user_scratch, &zero);
	if (!us || !us->kind)
		return 0;
	return (us->kind & 0xff) | (us->account.account & 0xffff) << 8;
}

/* record_reject counts one reject of class for reason in its record, of
 * the frame whose source where names (where_source, where.h). With user,
 * a SIP request out of dialog is recorded with the authentication rule
 * user_scratch holds (sip_user.h): user_account filled it for this very
 * request, as it does for every such request admit_call judges while the
 * policy has user rules, and maps.WritePolicy empties it when a policy
 * has none. Inlined in one global function, refused_again (verdict.h);
 * the key and a new record are built in reject_scratch. */
static __always_inline void record_reject(struct xdp_md *ctx, __u64 where, __u32 class, __u32 reason, __u64 now,
					  __u32 user)
{
	__u32 zero = 0;
	struct cac_reject_scratch *s = bpf_map_lookup_elem(&reject_scratch, &zero);
	if (!s)
		return;
	struct cac_reject_key *key = &s->key;
	struct frame f = where_frame(ctx, where);
	f.vlans = where_vlans(where);
	f.len = ctx->data_end - ctx->data;
	if (!source_of(&f, class, (struct cac_class_limits *)&full_source, &key->source))
		return;
	/* reason, rule and account in one word, as source_store writes the
	 * source: the fold reads them as one. */
	__u32 rule = 0;
	if (user && class >= CAC_CLASS_SIP_INVITE && class <= CAC_CLASS_SIP_OTHER)
		rule = user_rule_found();
	((__u32 *)key)[REJECT_KEY_REASON_WORD] = (reason & 0xff) | (rule & 0xffffff) << 8;
	__u64 second = now / 1000000000ULL;
	key->second = second;
	key->cpu = bpf_get_smp_processor_id();

	struct reject_budget *budget = this_cpu_budget(second);
	if (!budget)
		return;
	if (budget->used < REJECT_NEW_PER_SECOND) {
		if (count_in_slot(ctx, s, now, 0))
			return;
		struct cac_reject *r = bpf_map_lookup_elem(&rejects, key);
		if (r) {
			add_reject(r, now);
			return;
		}
		budget->used++;
		if (count_in_slot(ctx, s, now, 1) || new_record(ctx, s, now) == 0)
			return;
	}
	/* Out of new records this second (or the table took none): count it
	 * with other sources. */
	source_store(&key->source, class, CAC_SOURCE_OTHERS, 0, 0, 0, 0);
	if (count_in_slot(ctx, s, now, 0))
		return;
	struct cac_reject *r = bpf_map_lookup_elem(&rejects, key);
	if (r)
		add_reject(r, now);
	else if (!count_in_slot(ctx, s, now, 1) && new_record(ctx, s, now) != 0)
		lost_reject_record();
}
