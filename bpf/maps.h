/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Every map of the two programs, here and in reject_maps.h. An attachment
 * is one interface's XDP program with its egress program; the loader gives
 * every attachment of a state directory the same maps but for the few that
 * are its own (loader.Shared), and the egress program the XDP program's
 * maps in place of its own, so that what one learns the other reads.
 *
 * The egress program (tc_dialogs.c defines CAC_EGRESS) has only the first
 * group: an object carries every map it defines, and the loader would make
 * the rest for nothing.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"

/* Maps shared by every attachment, and by the egress program. */

/* UDP destination ports and what they carry (parse.h), written by the
 * control plane. Looked up only for UDP, so other traffic reads no map. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_ports);
} udp_ports SEC(".maps");

/* The dialogs the filter admitted or the server opened, in sets of
 * CAC_DIALOG_WAYS by the hash of their Call-ID (dialog.h). An array: 32
 * bytes a dialog, where a hash map's elements cost three times that. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384); /* sets; the loader sets the configured size, and dialog_mask */
	__type(key, __u32);
	__type(value, struct cac_dialog_set);
} dialogs SEC(".maps");

/* The L2TP tunnels whose sequence numbers the filter translates, two
 * entries each, made from the LNS's SCCRP (l2tp.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct cac_l2tp_key);
	__type(value, struct cac_l2tp_tunnel);
} l2tp_tunnels SEC(".maps");

/* The time a test sets, read instead of the kernel's clock when the
 * program is loaded with use_test_clock (clock.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} test_clock SEC(".maps");

/* The slot of limits in force, the classes any level limits and whether
 * agents are configured, in one word (bucket.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} policy_slot SEC(".maps");

/* The session agents' addresses, each to its agent's index (agent.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CAC_MAX_AGENT_ADDRS);
	__type(key, struct cac_prefix); /* prefixlen 128 */
	__type(value, __u32);           /* agent index */
} agents SEC(".maps");

/* No agent: what an agent lookup finds for an address of none. */
#define NO_AGENT 0xffffffff

/* Responses for the agents' state, and refused requests to answer
 * (struct cac_sip_event). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} sip_events SEC(".maps");

/* What the egress program holds of each agent, by slot like the limits:
 * its connection limit and what an INVITE toward it out of service gets
 * (egress.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * CAC_MAX_AGENTS); /* slot * CAC_MAX_AGENTS + agent */
	__type(key, __u32);
	__type(value, struct cac_agent_egress);
} agent_egress SEC(".maps");

/* Each agent's state as the daemon's pings found it (enum
 * cac_agent_state_flag), written by the daemon when it changes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_AGENTS);
	__type(key, __u32);
	__type(value, __u32);
} agent_state SEC(".maps");

/* Each connection's bucket (an agent with connection-cps), written by the
 * egress program; an apply keeps it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_AGENTS);
	__type(key, __u32);
	__type(value, struct cac_bucket);
} connection_buckets SEC(".maps");

/* The INVITEs the SIP server sent toward an agent that went on, by the
 * hash of their Call-ID (struct cac_sent): an out-service answer of that
 * agent counts only when it answers one of them within Timer B, and a
 * retransmission of the transaction takes no connection token. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* the hash of the Call-ID */
	__type(value, struct cac_sent);
} egress_txns SEC(".maps");

/* The Call-IDs of the INVITEs refused at egress toward an agent, with the
 * time: the server's ACK of the answer given on the agent's behalf is
 * dropped within Timer B, so the agent never sees a transaction it never
 * had. An INVITE of the same Call-ID that goes on removes the entry. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);   /* the hash of the Call-ID */
	__type(value, __u64); /* monotonic ns of the refusal */
} egress_refused SEC(".maps");

/* The egress program's per-CPU counters, by agent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAC_MAX_AGENTS);
	__type(key, __u32);
	__type(value, struct cac_egress_counts);
} egress_counts SEC(".maps");

/* A CPU's budget of refused INVITEs handed up this second, for user space
 * to answer on an agent's behalf. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reject_budget);
} egress_budget SEC(".maps");

/* The dialogs that hold sessions of a limit, by the hash of their Call-ID
 * (sessions.h): entered by the fast path, removed by the daemon when it
 * gives their sessions back. Each holds a session, so the table holds at
 * most the sum of the limits. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct cac_session);
} sessions SEC(".maps");

/* A CPU's budget of messages of those dialogs handed up this second. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reject_budget);
} session_budget SEC(".maps");

/* The limits of concurrent sessions, max-sessions (0: none), in two slots
 * the control plane switches between: accounts, customers, then agents. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * CAC_MAX_SESSION_LIMITS);
	__type(key, __u32);
	__type(value, __u32);
} session_limits SEC(".maps");

/* The sessions each limit's dialogs took, and gave back: a count is the
 * one less the other. The fast path alone adds to the first, the daemon
 * alone to the second, so no write of either is lost to the other; an
 * apply keeps both. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_SESSION_LIMITS);
	__type(key, __u32);
	__type(value, __u64);
} sessions_taken SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_SESSION_LIMITS);
	__type(key, __u32);
	__type(value, __u64);
} sessions_freed SEC(".maps");

#ifndef CAC_EGRESS


/* Maps shared by every attachment: one admission budget and one rate per
 * class, however many interfaces. */

/* Every level's limits, in two slots the control plane switches between. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct cac_limits);
} limits SEC(".maps");

/* The class and environment buckets, written by the fast path; an apply
 * keeps them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_buckets);
} buckets SEC(".maps");

/* The per-source buckets, entered only by an admitted call (admit.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 262144); /* the loader sets the configured size */
	__type(key, struct cac_source);
	__type(value, struct cac_bucket);
} sources SEC(".maps");

/* Access control (access.h, docs/design.md "Access control"), shared by
 * every attachment: one deny list for the box. The static lists, written
 * by the control plane: an IP prefix (IPv4 mapped into IPv6, as the
 * accounts') or a MAC, to enum cac_access; the longest prefix says. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CAC_MAX_ACCESS_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct cac_prefix);
	__type(value, __u32);
} access_list SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CAC_MAX_ACCESS_MACS);
	__type(key, __u64); /* the MAC in its first six bytes */
	__type(value, __u32);
} access_mac SEC(".maps");

/* The deny table: sources the fast path denied, the least recently used
 * out when it is full; the daemon releases them, and records both. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CAC_DENIED_DEFAULT); /* the loader sets the configured size */
	__type(key, struct cac_deny_key);
	__type(value, struct cac_denied);
} denied SEC(".maps");

/* Each source's refusals in the auto-deny window. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CAC_DENIED_DEFAULT); /* the loader sets the configured size */
	__type(key, struct cac_deny_key);
	__type(value, struct cac_deny_count);
} deny_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_access_settings);
} access_settings SEC(".maps");

/* Each CPU's frames of the source it last dropped from the deny table,
 * not yet in the entry (access.h, deny_frame). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_deny_pending);
} deny_pending SEC(".maps");

/* The TCP ports of SIP over TCP and TLS (ports.sip-tcp): a SYN to one is
 * a sip-connect. Looked up only for a SYN without ACK. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_tcp_ports);
} tcp_ports SEC(".maps");

/* One trie of account prefixes for each slot of limits. */
#define ACCOUNT_TRIE(name)                                                                         \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, CAC_MAX_ACCOUNTS);                                             \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, struct cac_prefix);                                                    \
		__type(value, struct cac_account);                                                 \
	} name SEC(".maps")

/* A source prefix's account and customer, in slot 0 and slot 1. */
ACCOUNT_TRIE(accounts0);
ACCOUNT_TRIE(accounts1);

/* One trie of authentication rules for each slot of limits: a CLI or
 * called-number prefix (struct cac_user_key) to its account and customer,
 * in the index space of the source accounts. */
#define USER_TRIE(name)                                                                            \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, CAC_MAX_ACCOUNTS);                                             \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, struct cac_user_key);                                                  \
		__type(value, struct cac_account);                                                 \
	} name SEC(".maps")

USER_TRIE(user_accounts0);
USER_TRIE(user_accounts1);

/* A CPU's lookup of the authentication rules, from user_account to
 * admission (sip_user.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_user_scratch);
} user_scratch SEC(".maps");

#define LEVEL_ARRAY(name, vtype, n)                                                                 \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__uint(max_entries, n);                                                            \
		__type(key, __u32);                                                                \
		__type(value, vtype);                                                               \
	} name SEC(".maps")

/* The leases of fleet-scope levels, by the index their limit names; the
 * daemon maps it into its memory (BPF_F_MMAPABLE) to grant and expire
 * tokens with atomics. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_LEASES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct cac_lease);
} leases SEC(".maps");

/* Limits by slot (slot * CAC_MAX_... + index); buckets by index alone. */
LEVEL_ARRAY(account_limits, struct cac_limit, 2 * CAC_MAX_ACCOUNTS);
LEVEL_ARRAY(account_buckets, struct cac_bucket, CAC_MAX_ACCOUNTS);
LEVEL_ARRAY(customer_limits, struct cac_limit, 2 * CAC_MAX_CUSTOMERS);
LEVEL_ARRAY(customer_buckets, struct cac_bucket, CAC_MAX_CUSTOMERS);

/* Each agent's limit and out-service codes, by slot like the limits. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * CAC_MAX_AGENTS); /* slot * CAC_MAX_AGENTS + agent */
	__type(key, __u32);
	__type(value, struct cac_agent);
} agent_limits SEC(".maps");

/* Each agent's bucket. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_AGENTS);
	__type(key, __u32);
	__type(value, struct cac_bucket);
} agent_buckets SEC(".maps");

/* The monotonic time of each agent's last SIP request. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_MAX_AGENTS);
	__type(key, __u32);
	__type(value, __u64);
} agent_seen SEC(".maps");

/* What the control plane measured, in two slots like the limits, so no
 * check sees a heartbeat from one write and a load from another
 * (charge.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct cac_inputs);
} inputs SEC(".maps");

/* The slot of measurements in force. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} inputs_slot SEC(".maps");

/* One charge ring per call type; written by the fast path, kept by an
 * apply. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CAC_NUM_CALL_TYPES);
	__type(key, __u32);
	__type(value, struct cac_charge_ring);
} charge_rings SEC(".maps");

/* The run-time settings, written whole by the control plane. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_settings);
} settings SEC(".maps");

/* The INVITE transactions the filter refused, by their Call-ID, for their
 * retransmissions (invite.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* the hash of the Call-ID (sip_hdr.h) */
	__type(value, struct cac_refused);
} refused SEC(".maps");

/* When a Call-ID of each slot last had a transaction remembered, in
 * either table above (recent.h): 8192 lines of 64 slots, 512 KiB. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct cac_recent_line);
} recent_calls SEC(".maps");

/* A CPU's budget of refused INVITE transactions remembered this second. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reject_budget);
} refused_budget SEC(".maps");

/* A CPU's budget of refused SIP requests handed up this second. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reject_budget);
} sip_reject_budget SEC(".maps");

/* Maps per attachment: each interface counts and logs its own. */

/* The per-CPU counters (stats.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_stats);
} stats SEC(".maps");

#include "reject_maps.h"

/* A CPU's index of the SIP message it reads (sip_index.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_sip_index);
} sip_index SEC(".maps");

#endif /* CAC_EGRESS */
