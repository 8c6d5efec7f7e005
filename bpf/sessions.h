/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Capacity (docs/design.md, "Capacity"): an account, a customer or a
 * session agent with max-sessions holds at most that many dialogs at once.
 *
 * A dialog takes its sessions when the filter admits its INVITE, before
 * any bucket is looked at (at egress, toward an agent, after agent-down):
 * a call refused for capacity takes nothing, and ten INVITEs at once
 * cannot all pass before the first is answered. The dialog is then in the
 * sessions table, by its Call-ID (its part toward an agent by the Call-ID
 * and the agent), with the limits it took from. Every later message of it,
 * either way, goes up to the daemon (session_note.h), which reads the
 * answers and BYEs and gives the sessions back; the fast path only takes
 * them, and gives back what a later level's refusal undoes.
 *
 * A limit's count is its sessions_taken less its sessions_freed: the fast
 * path alone adds to the one and the daemon alone to the other, so no
 * write of either is lost to the other. The Go twin is internal/model/admission
 * (sessions.go); what ends a dialog is cac/sessions.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "clock.h"
#include "sip_event.h"
#include "sip_hdr.h"
#include "where.h"

/* What session_take_one did. */
enum { SESSION_NONE, SESSION_TOOK, SESSION_FULL };

/* session_take's answer for a dialog that took sessions: no reason's
 * number, nor ADMITTED. */
#define SESSIONS_TAKEN 0x100

/* session_take_one takes a session of limit i in slot, if it has a limit;
 * it returns SESSION_FULL, and takes nothing, at the limit. The add comes
 * before the comparison, so that two CPUs never both take the last. */
static __always_inline int session_take_one(__u32 i, __u32 slot)
{
	if (i >= CAC_MAX_SESSION_LIMITS)
		return SESSION_NONE;
	__u32 li = (slot & 1) * CAC_MAX_SESSION_LIMITS + i;
	__u32 *max = bpf_map_lookup_elem(&session_limits, &li);
	__u64 *taken = bpf_map_lookup_elem(&sessions_taken, &i);
	__u64 *freed = bpf_map_lookup_elem(&sessions_freed, &i);
	if (!max || !taken || !freed || *max == 0)
		return SESSION_NONE;
	__u64 before = __sync_fetch_and_add(taken, 1);
	if ((__s64)(before - *freed) >= (__s64)*max) {
		__sync_fetch_and_sub(taken, 1);
		return SESSION_FULL;
	}
	return SESSION_TOOK;
}

/* session_give_one gives back a session session_take_one took. */
static __always_inline void session_give_one(__u32 i)
{
	__u64 *taken = i < CAC_MAX_SESSION_LIMITS ? bpf_map_lookup_elem(&sessions_taken, &i) : NULL;
	if (taken)
		__sync_fetch_and_sub(taken, 1);
}

/* connection_key is the sessions table's key of a dialog's part toward
 * session agent agent (a connection, at egress), apart from its account's
 * and from its parts toward other agents: a proxy sends the caller's
 * Call-ID on toward each agent it tries, and each part ends by its own
 * answers. Never 0. */
static __always_inline __u64 connection_key(__u64 callid, __u32 agent)
{
	/* "connect" and the agent, then FNV's prime */
	__u64 k = (callid ^ 0x636f6e6e656374ULL ^ ((__u64)agent << 56)) * 0x100000001b3ULL;
	return k ? k : 1;
}

/* session_limited reports whether session limit i has a max-sessions in
 * slot. */
static __always_inline int session_limited(__u32 i, __u32 slot)
{
	__u32 li = (slot & 1) * CAC_MAX_SESSION_LIMITS + i;
	__u32 *max = i < CAC_MAX_SESSION_LIMITS ? bpf_map_lookup_elem(&session_limits, &li) : NULL;
	return max && *max;
}

/* The error of a BPF_NOEXIST update of a key that is there. */
#define SESSION_EEXIST 17

#ifndef CAC_EGRESS

/*
 * session_take takes the sessions of an INVITE's account and customer,
 * the account an authentication rule found (user, sip_user.h) or else its
 * source prefix's; where packs its frame as where_pack does, slot the
 * limits in force. It returns CAC_REASON_CAPACITY at a limit, having
 * taken nothing, SESSIONS_TAKEN when the dialog took sessions, and ADMITTED
 * when it takes none: no account, no limit, or a dialog that holds its
 * sessions already (an INVITE again after a challenge, with the Call-ID
 * of the first).
 */
__noinline int session_take(struct xdp_md *ctx, __u64 where, __u64 user_slot)
{
	if (!ctx)
		return ADMITTED;
	struct frame f = where_frame(ctx, where);
	__u32 zero = 0, slot = user_slot & 1, a, c;
	/* The indexes are read right after each null check: a pointer into
	 * a value not yet checked is more than 6.1's verifier takes. */
	if (user_slot >> 1) {
		struct cac_user_scratch *us = bpf_map_lookup_elem(&user_scratch, &zero);
		if (!us)
			return ADMITTED;
		a = us->account.account;
		c = us->account.customer;
	} else {
		union prefix_words p;
		prefix_of(&f, &p);
		struct cac_account *acct = slot ? bpf_map_lookup_elem(&accounts1, &p.p) : bpf_map_lookup_elem(&accounts0, &p.p);
		if (!acct)
			return ADMITTED;
		a = acct->account;
		c = acct->customer;
	}
	__u64 callid = sip_callid(ctx, f.msgoff, f.msglen);
	if (!callid) /* a dialog that could not be told apart could not end: refused where it would hold one */
		return session_limited(a, slot) || session_limited(CAC_MAX_ACCOUNTS + c, slot) ? CAC_REASON_CAPACITY : ADMITTED;
	if (bpf_map_lookup_elem(&sessions, &callid))
		return ADMITTED;
	struct cac_session s = {
		.taken_ns = now_ns(),
		.account = CAC_NO_SESSION_LIMIT,
		.customer = CAC_NO_SESSION_LIMIT,
		.connection = CAC_NO_SESSION_LIMIT,
	};
	int r = session_take_one(a, slot);
	if (r == SESSION_FULL)
		return CAC_REASON_CAPACITY;
	if (r == SESSION_TOOK)
		s.account = a;
	r = session_take_one(CAC_MAX_ACCOUNTS + c, slot);
	if (r == SESSION_FULL) {
		session_give_one(s.account);
		return CAC_REASON_CAPACITY;
	}
	if (r == SESSION_TOOK)
		s.customer = CAC_MAX_ACCOUNTS + c;
	if (s.account == CAC_NO_SESSION_LIMIT && s.customer == CAC_NO_SESSION_LIMIT)
		return ADMITTED;
	/* A copy on another CPU entered the dialog first, and holds its
	 * sessions; a table with no room for it could not give them back,
	 * so the call is refused as over capacity. */
	long err = bpf_map_update_elem(&sessions, &callid, &s, BPF_NOEXIST);
	if (err) {
		session_give_one(s.account);
		session_give_one(s.customer);
		return err == -SESSION_EEXIST ? ADMITTED : CAC_REASON_CAPACITY;
	}
	return SESSIONS_TAKEN;
}

/* session_give_back gives back what session_take took for an INVITE that
 * a later level refused, and forgets its dialog. */
__noinline int session_give_back(struct xdp_md *ctx, __u64 where)
{
	if (!ctx)
		return 0;
	struct frame f = where_frame(ctx, where);
	__u64 callid = sip_callid(ctx, f.msgoff, f.msglen);
	struct cac_session *s = callid ? bpf_map_lookup_elem(&sessions, &callid) : NULL;
	if (!s)
		return 0;
	__u32 a = s->account, c = s->customer;
	if (bpf_map_delete_elem(&sessions, &callid) == 0) { /* one CPU gives back */
		session_give_one(a);
		session_give_one(c);
	}
	return 0;
}

#endif /* CAC_EGRESS */


#ifdef CAC_EGRESS
/*
 * session_of_connection takes a session of agent's max-sessions, in slot,
 * for an INVITE of callid toward it, and enters the dialog's connection
 * part: SESSION_TOOK, SESSION_FULL (a full table too: a part it could
 * not enter could never give its session back), or SESSION_NONE when the
 * agent has no limit or the dialog holds one of it already (an INVITE
 * again after a challenge).
 */
static __always_inline int session_of_connection(__u64 callid, __u32 agent, __u32 slot, __u64 now)
{
	if (agent >= CAC_MAX_AGENTS)
		return SESSION_NONE;
	__u32 i = CAC_MAX_ACCOUNTS + CAC_MAX_CUSTOMERS + agent;
	if (!callid) /* a part that could not be told apart could not end */
		return session_limited(i, slot) ? SESSION_FULL : SESSION_NONE;
	__u64 key = connection_key(callid, agent);
	if (bpf_map_lookup_elem(&sessions, &key))
		return SESSION_NONE;
	int r = session_take_one(i, slot);
	if (r != SESSION_TOOK)
		return r;
	struct cac_session s = {
		.taken_ns = now,
		.account = CAC_NO_SESSION_LIMIT,
		.customer = CAC_NO_SESSION_LIMIT,
		.connection = i,
	};
	long err = bpf_map_update_elem(&sessions, &key, &s, BPF_NOEXIST);
	if (err) {
		session_give_one(i);
		return err == -SESSION_EEXIST ? SESSION_NONE : SESSION_FULL;
	}
	return SESSION_TOOK;
}

/* session_of_connection_back gives back what session_of_connection took,
 * for an INVITE refused after all. */
static __always_inline void session_of_connection_back(__u64 callid, __u32 agent)
{
	__u64 key = connection_key(callid, agent);
	if (bpf_map_delete_elem(&sessions, &key) == 0)
		session_give_one(CAC_MAX_ACCOUNTS + CAC_MAX_CUSTOMERS + agent);
}
#endif /* CAC_EGRESS */
