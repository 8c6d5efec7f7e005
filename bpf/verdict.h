/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one exit every watched frame takes: a first packet goes through
 * admission here, a refused one is recorded and may be answered, and every
 * watched frame is counted (stats.h). Unwatched traffic never gets here,
 * so it writes nothing.
 */
#pragma once

#include "bpf_helpers.h"
#include "maps.h"
#include "parse.h"
#include "admit.h"
#include "reject.h"
#include "stats.h"
#include "invite.h"
#include "l2tp_lac.h"
#include "where.h"
#include "sip_user.h"
#include "sessions.h"
#include "session_note.h"
#include "access.h"

/* refused_again records a reject for reason (class above it) at now: of a
 * first packet admit_call refused, of a retransmission refused again, or
 * of an INVITE refused for capacity before admit_call; with user, named by
 * the authentication rule user_account found for it. A function of its
 * own, so that the record's key and value have a frame of their own. now
 * is the time of the verdict, so that the record counts in the second the
 * buckets judged it in, and the clock is read once. */
__noinline int refused_again(struct xdp_md *ctx, __u64 where, __u32 reason, __u32 user, __u64 now)
{
	__u32 class = code_arg(reason);
	reason = code_of(reason);
	if (reason < CAC_NUM_REASONS && class < CAC_NUM_CLASSES)
		record_reject(ctx, where_source(where), class, reason, now, user & 1);
	return 0;
}

/*
 * admit_call admits or rejects one first packet at now; its caller
 * records a reject (refused_again), so that no call chain under it is
 * three frames deep. It is a global function, so the verifier checks the
 * admission pipeline once instead of once for every way through the
 * parsers; where is a frame word with the class, the slot of limits in
 * force and the other admission fields set (where_admit, where.h; a BPF
 * function has five arguments).
 */
__noinline int admit_call(struct xdp_md *ctx, __u64 where, __u64 now)
{
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.len = ctx->data_end - ctx->data,
		.l3off = where_l3off(where),
		.vlans = where_vlans(where),
		.family = where_family(where),
	};
	__u32 class = where_class(where);
	int reason = admit(ctx, &f, class, where_slot(where), where_agents(where), where_user(where), now);
	/* Either of its two buckets holds a malformed frame for one reason. */
	if (reason != ADMITTED && class == CAC_CLASS_MALFORMED)
		reason = CAC_REASON_MALFORMED;
	return reason;
}


/* agent_stamp stamps the last request of the agent a frame comes from,
 * for a request that asks no limit. where packs l3off and family; a
 * global function, so the lookup is verified once. */
__noinline int agent_stamp(struct xdp_md *ctx, __u64 where)
{
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.l3off = where_l3off(where),
		.family = where_family(where),
	};
	__u32 agent = agent_of(&f);
	if (agent != NO_AGENT)
		agent_saw(agent, now_ns());
	return 0;
}

/* A CPU's budget of refused SIP requests handed up, per second. */
#define SIP_REJECTED_PER_SECOND 256


/* sip_rejected hands a refused SIP request to user space to answer. A
 * global function: the copy is verified once, not once per parser path. */
__noinline int sip_rejected(struct xdp_md *ctx, __u64 where)
{
	/* A flood of refused requests must not fill the ring buffer the
	 * agents' responses share, nor cost a copy each: a CPU hands up at
	 * most SIP_REJECTED_PER_SECOND a second, more than user space
	 * answers; the rest are only dropped. */
	__u32 zero = 0;
	struct reject_budget *b = bpf_map_lookup_elem(&sip_reject_budget, &zero);
	if (!b)
		return 0;
	budget_second(b, now_ns());
	if (b->used >= SIP_REJECTED_PER_SECOND)
		return 0;
	b->used++;
	struct frame f = where_frame(ctx, where);
	sip_event_out(&f, CAC_SIP_REJECTED, NO_AGENT, 0, ctx->ingress_ifindex);
	return 0;
}

/* answers_sent reports whether a response of agent answers an INVITE the
 * SIP server sent toward that agent within Timer B, as the egress program
 * recorded it (egress.h), by its Call-ID: the header a response repeats
 * whatever the agent adds to its Via (received, rport). */
static __always_inline int answers_sent(struct xdp_md *ctx, struct frame *f, __u32 agent)
{
	__u64 callid = sip_callid(ctx, f->msgoff, f->msglen);
	struct cac_sent *sent = callid ? bpf_map_lookup_elem(&egress_txns, &callid) : NULL;
	return sent && sent->agent == agent && now_ns() - sent->sent_ns < CAC_TIMER_B_NS;
}

/* agent_response hands a response from an agent to user space when its
 * code is on the agent's out-service list, saying whether it answers a
 * request the server sent. where is the response's frame word, code its
 * status code. */
__noinline int agent_response(struct xdp_md *ctx, __u64 where, __u32 code, __u32 slot)
{
	struct frame f = where_frame(ctx, where);
	__u32 agent = agent_of(&f);
	if (agent == NO_AGENT)
		return 0;
	__u32 al = (slot & 1) * CAC_MAX_AGENTS + agent;
	struct cac_agent *a = bpf_map_lookup_elem(&agent_limits, &al);
	if (a && out_code(a, code))
		sip_event_out(&f, CAC_SIP_AGENT_RESPONSE, agent, code | (__u32)answers_sent(ctx, &f, agent) << 16, 0);
	return 0;
}

/* is_sip_request reports whether a class is a SIP request's, which an
 * agent's bucket may hold and a 503 may answer. */
static __always_inline int is_sip_request(int class)
{
	return class >= CAC_CLASS_SIP_INVITE && class <= CAC_CLASS_SIP_INDIALOG;
}

/*
 * denied_verdict counts and drops a frame whose source access control
 * denied (classify.h): in all, and in its class where the frame showed
 * it before the parse its source was spared. Its own exit, taken before
 * verdict's: a flood from a denied source costs the parse to its source,
 * the lookups and these adds, nothing packed for admission
 * (BENCHMARKS.md, "Denied sources and SIP connections").
 */
static __always_inline int denied_verdict(__u32 result)
{
	__u32 zero = 0;
	struct cac_stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_DROP;
	if (RESULT_CLASS(result) == CAC_ACCESS_DENY)
		st->denied_static++;
	else
		st->denied_auto++;
	__u32 class = RESULT_CODE(result);
	if (class >= 1 && class <= CAC_NUM_CLASSES) {
		__u32 dc = class - 1;
		barrier_var(dc);
		if (dc < CAC_NUM_CLASSES)
			st->classes[dc].rejected[CAC_REASON_DENIED]++;
	}
	return XDP_DROP;
}

/* verdict_where packs what verdict needs of a frame besides its bytes. */
static __always_inline __u64 verdict_where(struct frame *f)
{
	return where_pack(f->l3off, f->udpoff, f->family, f->vlans, 0, f->msgoff, f->msglen);
}

/*
 * verdict admits or rejects a first packet, an in-dialog request or a
 * malformed frame, counts every watched frame, and returns what XDP does
 * with it. where is verdict_where's packing: l3off and family as the SIP
 * functions want them, VLANs, the message. (Inlined: as a global function
 * it would put a frame of its own under admit_call's 352 bytes on the
 * deepest call chain, past the 512 bytes of stack the verifier allows.)
 */
static __always_inline int verdict(struct xdp_md *ctx, __u64 where, __u32 result)
{
	__u32 zero = 0;
	struct cac_stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_PASS;
	if (result & RESULT_ODD) {
		if (RESULT_KIND(result) == CAC_KIND_CLASS && RESULT_CLASS(result) <= CAC_CLASS_PPPOE_PADR)
			st->pppoe_odd_forms++;
		else
			st->sip_odd_forms++;
	}
	__u64 l3 = where_ip(where);

	__u32 class = RESULT_CLASS(result);
	switch (RESULT_KIND(result)) {
	case CAC_KIND_INDIALOG:
		class = CAC_CLASS_SIP_INDIALOG;
		break;
	case CAC_KIND_MALFORMED:
		class = CAC_CLASS_MALFORMED;
		break;
	case CAC_KIND_CLASS:
		break;
	case CAC_KIND_FRAGMENT:
		st->fragment++;
		return XDP_PASS;
	default:
		st->passed_other++;
		/* A LAC's message of a tunnel the filter translates. */
		if (result & RESULT_L2TP) {
			l2tp_from_lac(ctx, where, L2TP_PASS);
			return XDP_PASS;
		}
		/* A response with a code an agent's out-service list may hold
		 * goes up. */
		if (RESULT_CODE(result) >= 100) {
			__u32 policy = policy_word();
			if (policy & POLICY_CAPACITY) /* an answer in a dialog that holds sessions */
				session_note(ctx, where, 0);
			if ((policy & POLICY_AGENTS) && RESULT_CODE(result) >= 300)
				agent_response(ctx, where, RESULT_CODE(result), policy & POLICY_SLOT);
		}
		return XDP_PASS;
	}
	if (class >= CAC_NUM_CLASSES)
		return XDP_PASS;
	__u32 ci = class;
	barrier_var(ci); /* bound the register that indexes */
	if (ci >= CAC_NUM_CLASSES)
		return XDP_PASS;
	struct cac_class_stats *cs = &st->classes[ci];

	/* The dialog table knows dialogs by Call-ID (dialog.h): a request of
	 * a dialog the filter admitted passes uncharged. */
	__u64 msgoff = where_msgoff(where), msglen = where_msglen(where);
	/* A BYE or any request of a dialog that holds sessions goes up,
	 * known to the dialog table or not (sessions.h). */
	if (class == CAC_CLASS_SIP_INDIALOG && (policy_word() & POLICY_CAPACITY))
		session_note(ctx, where, 0);
	if (class == CAC_CLASS_SIP_INDIALOG && dialog_verified(ctx, where, sip_callid(ctx, msgoff, msglen))) {
		st->sip_indialog_verified++;
		cs->admitted++;
		if (policy_word() & POLICY_AGENTS) /* a request all the same */
			agent_stamp(ctx, l3);
		return XDP_PASS;
	}
	int reason = ADMITTED;
	__u32 policy = policy_word();
	int sip = is_sip_request(class);
	/* A session agent's connection is held as its requests are, but by
	 * the shared levels' reserve alone (admit.h). */
	int agents = (sip || class == CAC_CLASS_SIP_CONNECT) && (policy & POLICY_AGENTS);
	int limited = (policy & POLICY_LIMITED(class)) || agents;
	/* The time of the verdict, read once for all that judges it. */
	__u64 now = limited ? now_ns() : 0;
	__u64 txmsg = where_msg(where);
	/* A retransmission of an INVITE transaction takes nothing: passed if
	 * the filter admitted it, refused again if not (invite.h). Looked for
	 * only where a limit would charge it. */
	int again = RETRANSMIT_NONE;
	if (limited && class == CAC_CLASS_SIP_INVITE)
		again = invite_retransmit(ctx, txmsg, l3, now);
	/* A CANCEL of an INVITE the filter admitted belongs to its
	 * transaction, and passes as its copies do. */
	if (limited && class == CAC_CLASS_SIP_OTHER && (result & RESULT_CANCEL))
		again = invite_cancel(ctx, txmsg, l3, now);
	/* An ICRQ of a tunnel the filter translates: only the LAC's next
	 * message is judged; a copy takes nothing (l2tp_lac.h). */
	int tunnel = L2TP_UNKNOWN;
	if ((result & RESULT_L2TP) && class == CAC_CLASS_L2TP_ICRQ) {
		tunnel = l2tp_from_lac(ctx, where, L2TP_CHECK);
		if (tunnel >= ADMITTED)
			again = tunnel;
	}
	if (again != RETRANSMIT_NONE) {
		if (sip && (policy & POLICY_AGENTS)) /* a request all the same */
			agent_stamp(ctx, l3);
		if (again == ADMITTED) {
			if (sip)
				st->sip_retransmits++;
			else
				st->l2tp_retransmits++;
			cs->admitted++;
			return XDP_PASS;
		}
		if (sip)
			st->sip_retransmits_refused++;
		else
			st->l2tp_retransmits++;
		reason = again;
		refused_again(ctx, where_source(where), code_pack(reason, class), 0, now ? now : now_ns());
	} else if (limited) {
		/* The authentication rules are read here, not under
		 * admit_call, whose call chain has no room for the walk. */
		__u64 user = 0;
		if ((policy & POLICY_USER_RULES) && class >= CAC_CLASS_SIP_INVITE && class <= CAC_CLASS_SIP_OTHER)
			user = user_account(ctx, where, policy & (POLICY_SLOT | POLICY_USER_RULES));
		/* Capacity before every other level: a call refused for it
		 * takes nothing, and one a later level refuses gives back its
		 * sessions (sessions.h). */
		int took = 0;
		if ((policy & POLICY_CAPACITY) && class == CAC_CLASS_SIP_INVITE) {
			reason = session_take(ctx, where, (policy & POLICY_SLOT) | (user & 1) << 1);
			took = reason == SESSIONS_TAKEN;
			if (took)
				reason = ADMITTED;
			else if (reason != ADMITTED)
				refused_again(ctx, where_source(where), code_pack(reason, class), user, now);
		}
		if (reason == ADMITTED) {
			reason = admit_call(ctx, where_admit(where_source(where), class, policy & POLICY_SLOT, agents, user), now);
			if (reason != ADMITTED && took)
				session_give_back(ctx, where);
			/* Under authentication rules, user_scratch names the
			 * rule that held this very request. */
			if (reason != ADMITTED)
				refused_again(ctx, where_source(where), code_pack(reason, class), 1, now);
		}
		/* A refused INVITE is remembered for its retransmissions. */
		if (reason != ADMITTED && class == CAC_CLASS_SIP_INVITE)
			invite_refused(ctx, txmsg, l3, now, reason);
	}
	if (reason == ADMITTED && class == CAC_CLASS_SIP_INVITE)
		invite_admitted(ctx, txmsg, l3, now ? now : now_ns());
	if (reason == ADMITTED) {
		cs->admitted++;
		if (tunnel == L2TP_NEW || tunnel == L2TP_AHEAD)
			l2tp_from_lac(ctx, where, L2TP_PASS);
		if (class == CAC_CLASS_MALFORMED) {
			struct cac_settings *set = bpf_map_lookup_elem(&settings, &zero);
			return set && set->malformed_drop ? XDP_DROP : XDP_PASS;
		}
		return XDP_PASS;
	}
	__u32 r = reason;
	barrier_var(r);
	if (r < CAC_NUM_REASONS)
		cs->rejected[r]++;
	/* A refusal of the source's own doing counts toward its auto-deny. */
	if ((policy & POLICY_AUTO_DENY) && counts_for_deny(r))
		deny_count(ctx, where_source(where), now ? now : now_ns(), policy);
	/* A refused ICRQ is answered with a ZLB in the LNS's name, so that
	 * the LAC does not retransmit it until it closes the tunnel. */
	if (tunnel != L2TP_UNKNOWN && tunnel != L2TP_AHEAD) {
		int act = l2tp_from_lac(ctx, where, again != RETRANSMIT_NONE ? L2TP_AGAIN : code_pack(L2TP_REFUSE, r));
		if (act == XDP_TX) {
			st->l2tp_answered++;
			return XDP_TX;
		}
	}
	if (class == CAC_CLASS_L2TP_ICRQ)
		st->l2tp_unanswered++;
	if (sip && class != CAC_CLASS_SIP_INDIALOG) {
		/* A refused SIP request user space answers with 503. */
		struct cac_settings *set = bpf_map_lookup_elem(&settings, &zero);
		if (set && (set->sip_reject >> (class - CAC_CLASS_SIP_INVITE)) & 1)
			sip_rejected(ctx, l3 | where_msg(where));
	}
	return XDP_DROP;
}
