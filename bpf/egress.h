/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Egress admission (docs/design.md, "Egress admission"): the INVITEs the
 * SIP server sends toward a session agent. One toward an agent out of
 * service in every realm, with on-out-of-service: fail-fast, or over the
 * agent's connection limit (FlySIP's connection Max CPS), is dropped here
 * and handed up, and the daemon answers it at once with a 503 from the
 * agent's address: the server hunts to its next route without waiting
 * for Timer B. A refusal takes no token. Every INVITE that goes on is
 * remembered by its Call-ID, with its transaction and its agent, so that
 * its retransmissions take no token either, and so that only an agent's
 * answer to a request the server really sent it may take the agent out of
 * service (answers_sent of verdict.h). The
 * server's ACK of an answer given on an agent's behalf is dropped: the
 * agent never had the transaction. The Go twin is
 * internal/model/admission/egress.go.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "parse.h"
#include "bucket.h"
#include "clock.h"
#include "sip_event.h"
#include "sip_txn.h"
#include "dialog_learn.h"
#include "sessions.h"
#include "where.h"

/* agent_to is the agent an IP destination is, or NO_AGENT. */
static __always_inline __u32 agent_to(struct frame *f)
{
	void *data = f->data, *data_end = f->data_end;
	struct cac_prefix p = {.prefixlen = 128};

	if (f->family == 4) {
		struct iphdr *ip = data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > data_end)
			return NO_AGENT;
		p.addr[10] = 0xff;
		p.addr[11] = 0xff;
		__builtin_memcpy(&p.addr[12], &ip->daddr, 4);
	} else if (f->family == 6) {
		struct ipv6hdr *ip6 = data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > data_end)
			return NO_AGENT;
		__builtin_memcpy(p.addr, ip6->daddr, 16);
	} else {
		return NO_AGENT;
	}
	__u32 *a = bpf_map_lookup_elem(&agents, &p);
	return a && *a < CAC_MAX_AGENTS ? *a : NO_AGENT;
}

/* egress_policy is the policy word (bucket.h), egress_slot the slot of
 * limits in force. */
static __always_inline __u32 egress_policy(void)
{
	__u32 zero = 0;
	__u32 *s = bpf_map_lookup_elem(&policy_slot, &zero);
	return s ? *s : 0;
}

static __always_inline __u32 egress_slot(void)
{
	return egress_policy() & 1;
}

/* egress_refusal is why an INVITE of callid toward agent at now is
 * refused, or ADMITTED, taking a session of the agent's max-sessions
 * (sessions.h) and a connection token for one that goes on: an agent out
 * of service first, then its capacity, then its rate. *took says whether
 * it took a session, which one refused for its rate still holds: it goes
 * back once the refusal is handed up, and stays with an INVITE that goes
 * on past the budget of hand-ups. */
static __always_inline int egress_refusal(__u32 agent, __u64 now, __u64 callid, int *took)
{
	__u32 slot = egress_slot();
	__u32 k = slot * CAC_MAX_AGENTS + agent;
	struct cac_agent_egress *a = bpf_map_lookup_elem(&agent_egress, &k);
	__u32 *state = bpf_map_lookup_elem(&agent_state, &agent);
	struct cac_bucket *b = bpf_map_lookup_elem(&connection_buckets, &agent);
	if (!a || !state || !b)
		return ADMITTED;
	if ((a->flags & AGENT_FAIL_FAST) && (*state & AGENT_OUT_OF_SERVICE))
		return CAC_EGRESS_AGENT_DOWN;
	int r = session_of_connection(callid, agent, slot, now);
	if (r == SESSION_FULL)
		return CAC_EGRESS_CAPACITY;
	*took = r == SESSION_TOOK;
	if (!bucket_take(&a->connection, b, now, 0))
		return CAC_EGRESS_CONNECTION;
	return ADMITTED;
}

/* egress_hand_up hands a refused INVITE up to be answered, within this
 * CPU's budget for the second; it returns 0 when it did. */
static __always_inline int egress_hand_up(struct frame *f, __u32 agent, int reason, __u64 now)
{
	__u32 zero = 0;
	struct reject_budget *b = bpf_map_lookup_elem(&egress_budget, &zero);
	if (!b)
		return -1;
	budget_second(b, now);
	if (b->used >= EGRESS_REFUSED_PER_SECOND)
		return -1;
	if (sip_event_copy(f, CAC_SIP_EGRESS_REFUSED, agent, reason, 0, 0))
		return -1;
	b->used++;
	return 0;
}

/*
 * egress_invite judges an INVITE out of dialog the server sends, and
 * learns the dialog of one that goes on (egress_learn); where packs its
 * frame as where_pack does. It returns TC_ACT_SHOT for one refused and
 * handed up, else TC_ACT_UNSPEC. The Call-ID is hashed once: with the
 * transaction for an INVITE toward an agent, alone for any other. A
 * global function: the hashes and the agent's key stay off the program's
 * frame.
 */
__noinline int egress_invite(struct __sk_buff *skb, __u64 where, __u64 now)
{
	if (!skb)
		return TC_ACT_UNSPEC;
	struct frame f = where_frame(skb, where);
	__u32 agent = agent_to(&f), callee = dialog_peer(&f, 1);
	struct cac_egress_counts *c = bpf_map_lookup_elem(&egress_counts, &agent);
	if (agent == NO_AGENT || !c) {
		egress_learn(sip_callid(skb, f.msgoff, f.msglen), now, callee);
		return TC_ACT_UNSPEC;
	}
	__u64 callid;
	__u64 txn = sip_txn(skb, f.msgoff, f.msglen, &callid);
	struct cac_sent *sent = callid ? bpf_map_lookup_elem(&egress_txns, &callid) : NULL;
	if (sent && txn && sent->txn == txn && now - sent->sent_ns < CAC_TIMER_B_NS) {
		c->retransmits++;
		egress_learn(callid, now, callee);
		return TC_ACT_UNSPEC;
	}
	int took = 0;
	int reason = egress_refusal(agent, now, callid, &took);
	if (reason >= 0 && reason < CAC_NUM_EGRESS_REASONS) {
		/* Remembered before it is handed up: the answer, and the
		 * server's ACK of it, can come back before this CPU goes on
		 * from the hand-up. One that goes on after all removes it. */
		if (callid)
			bpf_map_update_elem(&egress_refused, &callid, &now, BPF_ANY);
		if (egress_hand_up(&f, agent, reason, now) == 0) {
			c->refused[reason]++;
			if (took) /* refused for its rate: the session goes back */
				session_of_connection_back(callid, agent);
			return TC_ACT_SHOT; /* a refused INVITE opens no dialog: the next route's does */
		}
		c->unanswered++; /* it goes on, holding what it took, and is remembered as sent */
	} else {
		c->invites++;
	}
	if (callid) {
		struct cac_sent s = {.sent_ns = now, .txn = txn, .agent = agent};
		bpf_map_update_elem(&egress_txns, &callid, &s, BPF_ANY);
		bpf_map_delete_elem(&egress_refused, &callid);
	}
	egress_learn(callid, now, callee);
	return TC_ACT_UNSPEC;
}

/* is_ack reports whether a request is an ACK: its method, in any letter
 * case as the readers take methods, and a space. */
static __always_inline int is_ack(struct frame *f)
{
	struct sip_msg m = {.data = f->data, .data_end = f->data_end, .off = f->msgoff, .len = f->msglen};
	return (sip_byte(&m, 0) | 0x20) == 'a' && (sip_byte(&m, 1) | 0x20) == 'c' &&
	       (sip_byte(&m, 2) | 0x20) == 'k' && sip_byte(&m, 3) == ' ';
}

/*
 * egress_ack drops the server's ACK of an answer given on an agent's
 * behalf: an ACK toward the agent of a Call-ID whose INVITE was refused
 * at egress within Timer B (and no INVITE of it went on since). It
 * returns TC_ACT_SHOT for one dropped, else TC_ACT_UNSPEC.
 */
__noinline int egress_ack(struct __sk_buff *skb, __u64 where, __u64 now)
{
	if (!skb)
		return TC_ACT_UNSPEC;
	struct frame f = where_frame(skb, where);
	if (!is_ack(&f))
		return TC_ACT_UNSPEC;
	__u32 agent = agent_to(&f);
	struct cac_egress_counts *c = bpf_map_lookup_elem(&egress_counts, &agent);
	if (agent == NO_AGENT || !c)
		return TC_ACT_UNSPEC;
	__u64 callid = sip_callid(skb, f.msgoff, f.msglen);
	__u64 *refused = callid ? bpf_map_lookup_elem(&egress_refused, &callid) : NULL;
	if (!refused || now - *refused >= CAC_TIMER_B_NS)
		return TC_ACT_UNSPEC;
	c->acks++;
	return TC_ACT_SHOT;
}
