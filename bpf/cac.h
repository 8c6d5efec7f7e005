/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared with Go. bpf2go turns each of them into a Go type (-type);
 * the numbers they are sized and filled by are in shared.h.
 */
#pragma once

#include "uapi.h"
#include "shared.h"


/* No reason: the call is admitted. */
#define ADMITTED (-1)


struct cac_class_stats {
	__u64 admitted;
	__u64 rejected[CAC_NUM_REASONS];
};

/* Per-CPU counters; seen and rejected are sums that Go derives. */
struct cac_stats {
	struct cac_class_stats classes[CAC_NUM_CLASSES];
	__u64 fragment;
	__u64 passed_other;
	/* SIP requests in a form stricter parsers miss (a method not in
	 * upper case, leading CRLFs, several To headers): classified all the
	 * same, and counted so an operator sees who sends them. */
	__u64 sip_odd_forms;
	/* PADIs and PADRs with a session ID, which RFC 2516 forbids and
	 * pppoe-server answers: classified, and counted here too. */
	__u64 pppoe_odd_forms;
	/* In-dialog requests of a dialog the filter knows, passed uncharged
	 * (counted in sip-indialog's admitted too). */
	__u64 sip_indialog_verified;
	/* INVITE retransmissions within Timer B: of an admitted transaction,
	 * passed uncharged; of a refused one, refused again with no charge.
	 * Counted in sip-invite's admitted and rejected too. */
	__u64 sip_retransmits;
	__u64 sip_retransmits_refused;
	/* L2TP (l2tp.h): ICRQs the filter answered with a ZLB in the LNS's
	 * name (in l2tp-icrq's rejected too), copies of ICRQs passed or
	 * answered again without a charge, and refused ICRQs of a tunnel the
	 * filter does not translate, which could only be dropped. */
	__u64 l2tp_answered;
	__u64 l2tp_retransmits;
	__u64 l2tp_unanswered;
	/* Rejects the records table took in no record (reject_records_lost)
	 * and SIP messages a full ring buffer refused: the daemon did not keep
	 * up. Nothing else changes; the verdicts and counters above stay exact. */
	__u64 reject_records_lost;
	__u64 sip_events_lost;
	/* Frames of watched carriers dropped for their source (access.h):
	 * by a static deny, and by the deny table; and sources the fast path
	 * put in the deny table, which the daemon compares with those it
	 * saw go to tell evictions (docs/design.md, "Auto-deny"). */
	__u64 denied_static;
	__u64 denied_auto;
	__u64 deny_added;
};


/* A token bucket as GCRA sees it: one call per interval_ns, and a call
 * conforms while the theoretical arrival time is at most tolerance_ns
 * ahead of now, i.e. (burst - 1) intervals. interval_ns 0 is unlimited. */
struct cac_limit {
	__u64 interval_ns;
	__u64 tolerance_ns;
};

/* A level whose limit has this interval is fleet-scope: it spends the
 * lease whose index its tolerance holds instead of its bucket (lease.h).
 * No rate has an interval near it (the control plane caps intervals at
 * 2^40 ns). */
#define CAC_LEASE_INTERVAL 0xffffffffffffffffULL

/* A fleet-scope limit's lease on this box (docs/design.md, "Fleet"): the
 * tokens the daemon was granted of the fleet's limit and has not seen
 * spent or expired. The fast path spends one per admitted call with an
 * atomic add; the daemon adds a grant and takes back expired tokens with
 * atomics on a memory mapping of the map, so neither side's write is ever
 * lost. tokens is below zero only while a refused call gives back what it
 * took. short counts the calls the lease refused: the demand the daemon
 * sizes the next lease to. */
struct cac_lease {
	__s64 tokens;
	__u64 short_calls;
	/* expires_ns is when the newest grant's lifetime ends, on the fast
	 * path's clock: from then on no token is spent, so the lease of a
	 * daemon that stopped (SIGSTOP, a crash) runs out by itself within a
	 * lifetime, where before it stayed spendable until a daemon drained
	 * it (docs/design.md, "Fleet"). 0, never granted, spends nothing. */
	__u64 expires_ns;
	__u64 _pad; /* 32 bytes: every word stays aligned in the daemon's mapping */
};

/* A bucket's state: its theoretical arrival time, updated with CAS. Zero
 * starts it full. */
struct cac_bucket {
	__u64 tat_ns;
};


/* A source as the per-source LRU knows it: also the key of that map. */
struct cac_source {
	__u8 class;
	__u8 family;   /* 4 or 6 for an IP source, 0 for a PPPoE one */
	__u16 vlan[2]; /* outer and inner VLAN ID when they are part of the key */
	__u8 addr[16]; /* IPv4 in the first 4 bytes, IPv6 cut to the prefix, or a MAC */
	__u8 _pad[2];  /* 24 bytes, so that what embeds it needs no hidden padding */
};

/* The per-source limits of one class. */
struct cac_class_limits {
	struct cac_limit per_source; /* interval 0: no per-source bucket */
	__u8 source_key;             /* enum cac_source_key */
	__u8 ipv6_prefix;            /* bits of an IPv6 source that count */
	__u8 _pad[6];
};


/* What each admitted call of a type costs, and for how many ticks. */
struct cac_charge {
	__u32 charge; /* 0: the type has no charge line */
	__u32 lifetime_ticks;
};


/* Cisco call admission (the charge budget), part of the limits so that an
 * apply switches it with them. Charges are in thousandths. */
struct cac_admission {
	__u64 limit_milli;    /* 0: CAC not operational */
	__u64 stale_after_ns; /* 0: never stale */
	struct cac_charge type[CAC_NUM_CALL_TYPES];
	__u32 cpu_limit_milli; /* new model: CPU at or over this rejects; 0: no gate */
	__u8 new_model;
	__u8 on_stale; /* enum cac_on_stale */
	/* The limit is the fleet's (docs/design.md, "Fleet"): a call with a
	 * charge also spends charge x lifetime ticks of the lease
	 * CAC_LEASE_CALL_ADMISSION. */
	__u8 fleet;
	__u8 _pad[1];
};

/* Every level's limit in one map value, so one lookup finds them all. */
struct cac_limits {
	struct cac_limit level[CAC_NUM_LEVELS];
	/* Of each class and the environment: how far short of its tolerance a
	 * stranger's call stops, so that the last of the bucket is the
	 * session agents' (docs/design.md, "Trusted first"). At most the
	 * tolerance; 0 for none. */
	__u64 reserve_ns[CAC_NUM_LEVELS];
	struct cac_class_limits classes[CAC_NUM_CLASSES];
	__u32 accounts; /* configured source accounts; 0 skips the prefix lookup */
	__u32 agents;   /* configured session agents: valid agent indexes */
	struct cac_admission cac;
};

/* What the control plane measured, written whole into the slot not in
 * use and then switched to, as limits are. */
struct cac_inputs {
	__u64 heartbeat_ns; /* monotonic time of the write; 0: no control plane */
	__u64 load_milli;   /* load charge, thousandths */
	__u32 cpu_milli;    /* CPU percent of the last interval, thousandths */
	__u32 buffers_full; /* nonzero: a watched receive buffer is full */
	__u32 cpu_avg_milli; /* CPU percent over the load lifetime: shown, not used here */
	__u32 _pad;
};

/* The calls a type admitted, and where that total stood at the start of
 * each recent tick: calls in force = total - snap[first tick of the
 * lifetime]. A lifetime change needs no new state. */
struct cac_charge_ring {
	__u64 total;
	__u64 tick;           /* newest tick whose snapshot is written */
	__u64 snap[CAC_RING]; /* at tick % CAC_RING */
};

/* A CPU's budget of new entries for the second it names (reject.h,
 * invite.h, and the refused SIP requests of verdict.h). */
struct reject_budget {
	__u64 second;
	__u64 used;
};

/* budget_second starts a CPU's budget afresh when now is in another
 * second than the one it counts. */
static __always_inline void budget_second(struct reject_budget *b, __u64 now)
{
	__u64 second = now / 1000000000ULL;
	if (b->second != second) {
		b->second = second;
		b->used = 0;
	}
}

/* Rejects of one source, class and reason, within one second. */
struct cac_reject_key {
	struct cac_source source; /* the full source: whole address, MAC and VLANs */
	__u8 reason;              /* enum cac_reason */
	/* The authentication rule whose account held the request (enum
	 * cac_user_rule: cli or called; 0 for none, or a source prefix's)
	 * and that account's index. */
	__u8 rule;
	__u16 account;
	__u32 second; /* the second of the coarse monotonic clock it counts */
	/* The CPU that counts in the record: each CPU keeps records of its
	 * own, which no other CPU writes, and the daemon merges them. */
	__u32 cpu;
};

struct cac_reject {
	__u64 second;   /* coarse monotonic clock, in seconds: the key's */
	__u64 count;    /* rejects in that second */
	__u64 first_ns; /* first and last reject, monotonic */
	__u64 last_ns;
	__u32 ifindex;
	__u32 _pad;
};


/* A CPU's scratch for the reject it records (reject.h): the key and a
 * new record are built here, not on the stack. */
struct cac_reject_scratch {
	struct cac_reject_key key;
	__u32 _pad;
	struct cac_reject rec;
};

/* A CPU's index of the SIP message it is reading (sip_index.h): where the
 * classifier's walk over the header lines found the values of the first
 * Call-ID, CSeq and Via, so that nothing walks the lines again. */
struct cac_sip_index {
	__u64 key;   /* the message it is of (sip_index_key); 0: none */
	__u64 found; /* as sip_find_txn returns them */
	/* The message's transaction as sip_txn hashed it, for the next
	 * asking of the same message (a refused INVITE of a recent Call-ID
	 * asks whether it is a copy, then is remembered): valid while
	 * txn_key is the message's key. */
	__u64 txn_key;
	__u64 callid;
	__u64 txn;
	/* callid alone is valid while callid_key is the message's key: a new
	 * call's INVITE hashes no more than its Call-ID (invite.h). */
	__u64 callid_key;
};

/* An LPM key: IPv4 is mapped into IPv6 (::ffff:a.b.c.d), one trie for both. */
struct cac_prefix {
	__u32 prefixlen;
	__u8 addr[16];
};

/* Where a source prefix belongs. */
struct cac_account {
	__u32 account;  /* index into account_limits and account_buckets */
	__u32 customer; /* index into customer_limits and customer_buckets */
};

/* An LPM key of the authentication rules: data[0] is the rule's kind
 * (enum cac_user_rule), then the user's first bytes, zero padded. A rule
 * of n characters has prefixlen 8 * (1 + n); a lookup 8 * (1 +
 * CAC_USER_MAX). */
struct cac_user_key {
	__u32 prefixlen;
	__u8 data[1 + CAC_USER_MAX];
	__u8 _pad[3];
};

/* A CPU's scratch of the authentication rules (sip_user.h): the key the
 * lookups are built in (a map value, so no stack pointer goes to a
 * global function), and what was found, which admission reads. */
struct cac_user_scratch {
	struct cac_user_key key;
	struct cac_account account;
	__u32 kind; /* enum cac_user_rule of the rule found; 0: none */
	__u32 _pad;
};

/* Every level's bucket in one map value, likewise. */
struct cac_buckets {
	struct cac_bucket level[CAC_NUM_LEVELS];
};

/* Run-time settings, written whole by the control plane. */
struct cac_settings {
	__u8 malformed_drop;
	__u8 sip_reject; /* bit per SIP request class (1 << (class - sip-invite)), sip-invite to
			  * sip-other: answer a reject with 503 */
	__u8 _pad[6];
};


/* The auto-deny settings (access.h, docs/design.md "Auto-deny"): a
 * source refused refused times within CAC_DENY_SLOTS slots of slot_ns is
 * denied for deny_for_ns. slot_ns 0: auto-deny is off. */
struct cac_access_settings {
	__u64 slot_ns;
	__u64 deny_for_ns;
	__u32 refused;
	__u8 ipv6_prefix; /* the bits of an IPv6 source that are one source */
	__u8 _pad[3];
};

/* A source in the deny table: an IP address, IPv6 cut to the prefix of
 * the settings, or for PPPoE a MAC (family 0). */
struct cac_deny_key {
	__u8 family;
	__u8 _pad[7];
	__u8 addr[16]; /* IPv4 in the first 4 bytes, a MAC in the first 6 */
};
_Static_assert(sizeof(struct cac_deny_key) == 24, "a deny key is three words");

/* A denied source: since and until in the fast path's clock, the frames
 * dropped since, and the refusals that earned it. */
struct cac_denied {
	__u64 since_ns;
	__u64 until_ns;
	__u64 frames;
	__u32 refusals;
	__u32 _pad;
};

/* A CPU's count of the frames it dropped from the source it last found in
 * the deny table, not yet added to that entry's frames: of the denial
 * that began at since_ns (a source denied again is counted afresh). The
 * daemon adds it to the entry's when it reads the table. */
struct cac_deny_pending {
	struct cac_deny_key key;
	__u64 since_ns;
	__u64 frames;
	__u64 last_ns; /* the fast path's clock at its last frame */
};

/* A source's refusals, a slot each for the slots of the window up to
 * tick, the newest slot's number (now / slot_ns). */
struct cac_deny_count {
	__u64 tick;
	__u32 slot[CAC_DENY_SLOTS];
};

/* The TCP ports a SYN to which is a sip-connect: non-zero at the port. */
struct cac_tcp_ports {
	__u8 sip[65536];
};

/* An agent's own limit and out-service codes, by slot like the limits. */
struct cac_agent {
	struct cac_limit limit; /* first: admission takes the agent's address for it */
	__u64 out_codes[CAC_OUT_CODES_WORDS];
};
_Static_assert(__builtin_offsetof(struct cac_agent, limit) == 0, "the limit opens struct cac_agent");

/* What the egress program holds of an agent, by slot like the limits
 * (egress.h): its connection limit (FlySIP's connection Max CPS; zero
 * interval: none) and flags (enum cac_agent_flag). */
struct cac_agent_egress {
	struct cac_limit connection;
	__u32 flags;
	__u32 _pad;
};

/* An INVITE the SIP server sent toward an agent that went on, by the hash
 * of its Call-ID (egress.h): when it went, its transaction (for its
 * retransmissions) and the agent (for the answers that may count). */
struct cac_sent {
	__u64 sent_ns;
	__u64 txn;
	__u32 agent;
	__u32 _pad;
};

/* A dialog that holds sessions, by the hash of its Call-ID (sessions.h):
 * when its INVITE was admitted, and the limits it took one of, each an
 * index of sessions_taken or CAC_NO_SESSION_LIMIT. */
struct cac_session {
	__u64 taken_ns;
	__u32 account;
	__u32 customer;
	__u32 connection;
	__u32 _pad;
};

/* The egress program's per-CPU counters of one agent: INVITE transactions
 * sent toward it, their retransmissions (passed uncharged), the INVITEs
 * refused on its behalf by reason, those it would have refused but
 * could not hand up to be answered, which went on to the agent, and the
 * server's ACKs of the answers given on its behalf, which never reach it. */
struct cac_egress_counts {
	__u64 invites;
	__u64 retransmits;
	__u64 refused[CAC_NUM_EGRESS_REASONS];
	__u64 unanswered;
	__u64 acks; /* ACKs of the answers given on its behalf, dropped */
};

/* A SIP message user space must see: a response from an agent with an
 * out-service code, or a request the filter refused and user space answers
 * with 503. The addresses are IPv4 mapped into IPv6 for family 4. */
struct cac_sip_event {
	__u8 kind;   /* enum cac_sip_event_kind */
	__u8 family; /* 4 or 6 */
	__u16 len;   /* bytes of data that are the message */
	__u32 agent; /* agent index, for a response */
	__u16 sport; /* host order */
	__u16 dport;
	__u16 code; /* the response code, for a response */
	/* For a response: 1 when it answers an INVITE transaction the SIP
	 * server sent toward the agent within Timer B (egress.h). For a
	 * message of a dialog that holds sessions: 1 when the SIP server
	 * sent it (sessions.h). */
	__u8 sent;
	__u8 l2len; /* bytes of l2 that are the frame's; 0: none */
	/* For a message of a dialog that holds sessions (sessions.h): the
	 * hash of its Call-ID, the sessions table's key. 0 otherwise. */
	__u64 callid;
	__u8 saddr[16];
	__u8 daddr[16];
	/* For a refused request to answer: the interface it came in on, and
	 * its link-layer header as it came (Ethernet and VLAN tags), so that
	 * the answer leaves on that wire to the MAC the request came from,
	 * whatever the routing table says (docs/design.md, "Answers"). */
	__u32 ifindex;
	__u8 l2[CAC_SIP_L2_MAX];
	__u8 data[CAC_SIP_COPY];
};


/* A dialog whose INVITE the filter admitted, or the server opened, with
 * the INVITE's transaction (sip_txn.h) for its retransmissions: one way
 * of a set of the dialog table (dialog.h). */
struct cac_dialog {
	__u64 callid;      /* the hash of its Call-ID; 0: a free way */
	__u64 invite_ns;   /* when the INVITE was admitted or sent */
	__u64 txn;         /* the hash of its Call-ID, CSeq and top Via; 0: none */
	__u32 retransmits; /* passed uncharged so far */
	/* The dialog's two sides (docs/design.md, "Dialogs bound to their
	 * peers"), each the fold of an address (dialog_peer); 0: not known.
	 * The caller sent the INVITE the filter admitted; the callee is the
	 * one the server sent an INVITE of the dialog to. */
	__u32 caller;
	__u32 callee;
	__u32 flags; /* DIALOG_ANSWERED (dialog_learn.h) */
	/* The theoretical arrival time of the dialog's bucket (GCRA, one
	 * request every 1/CAC_DIALOG_CPS s, CAC_DIALOG_BURST at once). */
	__u64 tat_ns;
};

/* The dialogs whose Call-ID hashes to one set: a set is one element of
 * the dialog table, two cache lines. */
enum cac_dialog_ways { CAC_DIALOG_WAYS = 4 };
struct cac_dialog_set {
	struct cac_dialog way[CAC_DIALOG_WAYS];
};

/* A line of the table of recent Call-IDs (recent.h): one byte a slot. */
enum { CAC_RECENT_SLOTS = 64 };
struct cac_recent_line {
	__u8 stamp[CAC_RECENT_SLOTS];
};

/* An INVITE transaction the filter refused, kept by the hash of its
 * Call-ID: a retransmission within Timer B is refused again for the same
 * reason. Keyed by the Call-ID, a new call's INVITE is looked up without
 * hashing its CSeq and Via (invite.h). */
struct cac_refused {
	__u64 refused_ns;
	__u32 reason;
	__u32 pad;
	__u64 txn; /* the refused transaction of the Call-ID the entry is of */
};


/* An L2TP tunnel as one side's control messages name it: by the LAC's
 * address (IPv4 mapped into IPv6) and UDP port, and the tunnel ID (v2) or
 * control connection ID (v3) in the header. The LAC's messages carry the
 * LNS's ID (dir CAC_L2TP_TO_LNS), the LNS's carry the LAC's
 * (CAC_L2TP_TO_LAC). Both entries of a tunnel are made from the LNS's
 * SCCRP, on egress (l2tp.h). */
struct cac_l2tp_key {
	__u8 addr[16];
	__u32 id;   /* host order */
	__u16 port; /* network order */
	__u8 version;
	__u8 dir;
};


/* A tunnel's translation. Only the CAC_L2TP_TO_LNS entry keeps the
 * sequence state; the other names it (peer_id, the LNS's ID). */
struct cac_l2tp_tunnel {
	__u64 seen_ns;   /* the tunnel's last control message, either way */
	__u64 closed_ns; /* a StopCCN went by; 0 while the tunnel is open */
	/* The LAC's last 64 messages before next_ns, newest in bit 0: a bit
	 * set is an ICRQ the filter answered, whose copy is answered again. */
	__u64 refused;
	__u32 peer_id;   /* the other side's ID: the LAC's in a TO_LNS entry */
	__u32 skipped;   /* ICRQs the filter answered: the LAC's Ns is ahead by this */
	__u16 next_ns;   /* the LAC's numbering: the Ns of its next new message */
	__u8 reason;     /* what refused the last ICRQ answered */
	__u8 _pad[5];
};


/* One byte per UDP destination port: an enum cac_port_kind. */
struct cac_ports {
	__u8 kind[65536];
};

/* Every type Go reads that no map holds, as one struct: the records of
 * the sip_events ring and the enums of shared.h. bpf2go exports only the
 * types of the object's BTF, which holds only what the object defines, so
 * xdp_cac.c defines one of these where no loader looks. */
struct cac_exported {
	struct cac_sip_event sip_event;
	enum cac_class class;
	enum cac_reason reason;
	enum cac_verdict_kind kind;
	enum cac_result_flag result_flag;
	enum cac_port_kind port_kind;
	enum cac_access access;
	enum cac_level level;
	enum cac_policy policy;
	enum cac_user_rule user_rule;
	enum cac_source_key source_key;
	enum cac_call_type call_type;
	enum cac_charge_ring_size charge_ring_size;
	enum cac_on_stale on_stale;
	enum cac_capacity capacity;
	enum cac_frame_bound frame_bound;
	enum cac_sip_bound sip_bound;
	enum cac_sip_event_kind sip_event_kind;
	enum cac_reject_record reject_record;
	enum cac_retransmit retransmit;
	enum cac_dialog_ways dialog_ways;
	enum cac_dialog_bucket dialog_bucket;
	enum cac_l2tp_dir l2tp_dir;
	enum cac_l2tp_bound l2tp_bound;
	enum cac_egress_reason egress_reason;
	enum cac_agent_flag agent_flag;
	enum cac_agent_state agent_state;
	struct cac_agent_egress agent_egress;
	struct cac_egress_counts egress_counts;
};
