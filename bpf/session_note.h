/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The messages of the dialogs that hold sessions go up to the daemon
 * (sessions.h, docs/design.md "Capacity"): both programs hand up each
 * message of a dialog whose account part, or whose part toward the
 * session agent the message comes from (XDP) or goes to (egress), is in
 * the sessions table.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"
#include "clock.h"
#include "sessions.h"
#include "sip_event.h"
#include "sip_hdr.h"
#include "where.h"

/*
 * session_note hands a message of a dialog that holds sessions up to user
 * space, within this CPU's budget for the second: where packs its frame
 * as where_pack does, and from_server is 1 for one the SIP server sends
 * (the egress program's). The event names the agent the message is from
 * or to, and the key of the part it belongs to. A global function of both
 * programs, so the lookups and the copies are verified once.
 */
__noinline int session_note(CAC_CTX *ctx, __u64 where, __u32 from_server)
{
	if (!ctx)
		return 0;
	struct frame f = where_frame(ctx, where);
	__u64 callid = sip_callid(ctx, f.msgoff, f.msglen);
	if (!callid)
		return 0;
	__u32 zero = 0;
	struct reject_budget *b = bpf_map_lookup_elem(&session_budget, &zero);
	if (!b)
		return 0;
	budget_second(b, now_ns());
#ifdef CAC_EGRESS
	__u32 agent = agent_to(&f);
#else
	__u32 agent = agent_of(&f);
#endif
	/* The account's part of the dialog, then the part toward the agent. */
	__u64 key = callid;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (i == 1) {
			if (agent >= CAC_MAX_AGENTS)
				break;
			key = connection_key(callid, agent);
		}
		if (!bpf_map_lookup_elem(&sessions, &key) || b->used >= SESSION_EVENTS_PER_SECOND)
			continue;
		b->used++;
		if (sip_event_copy(&f, CAC_SIP_SESSION, agent, (from_server & 1) << 16, key, 0)) {
#ifndef CAC_EGRESS
			lost_sip_event();
#endif
		}
	}
	return 0;
}
