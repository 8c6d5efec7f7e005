/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Every number the programs and Go must agree on: classes, reasons, kinds,
 * flags, table sizes and bounds. Each is a member of a named enum, which
 * bpf2go exports as a Go type with its constants (-type, bpf/gen.go), and a
 * Go test (maps/shared_test.go) holds the Go side's numbers to them. What
 * is wider than an int is kept here in a coarser unit, with the macro the
 * C side uses beside it. The structs Go reads are in cac.h, and so is
 * struct cac_exported, which puts these enums in the object for bpf2go.
 */
#pragma once

/* The first packets of a new session that xdpcac admits or drops. */
enum cac_class {
	CAC_CLASS_PPPOE_PADI = 0,
	CAC_CLASS_PPPOE_PADR = 1,
	CAC_CLASS_L2TP_SCCRQ = 2,
	CAC_CLASS_L2TP_ICRQ = 3,
	CAC_CLASS_SIP_INVITE = 4,
	CAC_CLASS_SIP_OPTIONS = 5,
	CAC_CLASS_SIP_REGISTER = 6,
	CAC_CLASS_SIP_OTHER = 7,    /* any other SIP request method out of dialog */
	/* Not first packets, but held by limits all the same: an in-dialog
	 * request (To tag), and a frame of a watched carrier that cannot be
	 * classified to the end. Only their per-source and class buckets
	 * apply (docs/design.md, "Unclassifiable is limited"). */
	CAC_CLASS_SIP_INDIALOG = 8,
	CAC_CLASS_MALFORMED = 9,
	/* A TCP SYN without ACK to a SIP TCP or TLS port: a connection a
	 * SIP server over TCP will read requests on (docs/design.md, "SIP
	 * connections"). Held like every class; the messages of the stream
	 * are the server's. */
	CAC_CLASS_SIP_CONNECT = 10,
	CAC_NUM_CLASSES = 11,
};

/* Why a call was rejected, in the order the admission pipeline checks. */
enum cac_reason {
	CAC_REASON_STALE = 0,
	CAC_REASON_CPU_LIMIT = 1,
	CAC_REASON_BUFFERS = 2,
	CAC_REASON_SOURCE = 3,
	CAC_REASON_ACCOUNT = 4,
	CAC_REASON_CUSTOMER = 5,
	CAC_REASON_AGENT = 6,
	CAC_REASON_CLASS = 7,
	CAC_REASON_ENVIRONMENT = 8,
	CAC_REASON_SESSION_CHARGES = 9,
	CAC_REASON_TOTAL_CHARGE = 10,
	CAC_REASON_MALFORMED = 11, /* a malformed limit: class malformed only */
	/* An account or customer at its max-sessions (sessions.h): judged
	 * before every other reason, numbered after them. */
	CAC_REASON_CAPACITY = 12,
	/* The source is on a deny list or auto-denied (access.h): judged
	 * before any parse of the message, numbered last. */
	CAC_REASON_DENIED = 13,
	CAC_NUM_REASONS = 14,
};

/* What the classifier made of a frame. */
enum cac_verdict_kind {
	CAC_KIND_UNWATCHED = 0,  /* not on a watched carrier: passed, never counted */
	CAC_KIND_CLASS = 1,      /* first packet of a session of a class */
	CAC_KIND_OTHER = 2,      /* on a watched carrier, but opens no session */
	CAC_KIND_INDIALOG = 3,   /* SIP request inside an existing dialog */
	CAC_KIND_FRAGMENT = 4,   /* non-first fragment of a UDP datagram */
	CAC_KIND_MALFORMED = 5,  /* a watched carrier, truncated or inconsistent */
	CAC_KIND_DENIED = 6,     /* a watched carrier from a denied source (access.h) */
};

/* Flags of a classifier result, above its kind, class and code (parse.h). */
enum cac_result_flag {
	/* An L2TP control message of a tunnel (T, L and S set, v2 or v3):
	 * the message's offset and length are in the frame. */
	RESULT_L2TP = 1 << 26,
	/* A CANCEL out of dialog (sip-other): one of an INVITE the filter
	 * admitted passes uncharged (invite.h). */
	RESULT_CANCEL = 1 << 27,
	/* A request in a form stricter parsers miss (a SIP method not in
	 * upper case, a PADI with a session ID): classified all the same,
	 * and counted. */
	RESULT_ODD = 1 << 28,
};

/* What a UDP destination port carries. */
enum cac_port_kind {
	CAC_PORT_NONE = 0,
	CAC_PORT_L2TP = 1,
	CAC_PORT_SIP = 2,
	/* Not a UDP port's: what a TCP SYN to a port of tcp_ports opens. */
	CAC_PORT_SIP_TCP = 3,
};

/* What the access lists say of a source (access.h), and what a denied
 * frame's result carries: which list denied it. */
enum cac_access {
	CAC_ACCESS_NONE = 0,
	CAC_ACCESS_DENY = 1,  /* a static deny: a deny prefix or MAC */
	CAC_ACCESS_AUTO = 2,  /* the deny table: auto-denied */
	CAC_ACCESS_ALLOW = 3, /* an allow prefix or MAC: never denied */
	/* The deny table (denied) and its refusal counts (deny_counts)
	 * hold this many sources unless the configuration says otherwise;
	 * the static lists hold at most these many entries. */
	CAC_DENIED_DEFAULT = 65536,
	CAC_MAX_ACCESS_PREFIXES = 16384,
	CAC_MAX_ACCESS_MACS = 4096,
	/* A source's refusals are counted in this many slots of the
	 * auto-deny window (access.h, docs/design.md "Auto-deny"). */
	CAC_DENY_SLOTS = 8,
	/* A CPU hands the frames it counted of a denied source to the deny
	 * table's entry at most every this many (deny_pending, access.h). */
	CAC_DENY_PENDING_MAX = 1024,
};

/* A CPU's count moves to another denied source once the one it holds has
 * sent nothing for this long (deny_frame, access.h). */
#define CAC_DENY_PENDING_IDLE_NS 10000000ULL

/* Index of each bucket in the limits and buckets maps: one per class,
 * then the environment's. Source, account and customer buckets come later. */
enum cac_level {
	CAC_LEVEL_ENVIRONMENT = 11,
	CAC_NUM_LEVELS = 12,
};
_Static_assert(CAC_LEVEL_ENVIRONMENT == CAC_NUM_CLASSES, "levels: one per class, then environment");

/*
 * The word of the policy_slot map (bucket.h): the slot of limits in force
 * in its lowest bit, above it a bit per class any level limits
 * (POLICY_LIMITED), and whether any session agent is configured: then
 * every SIP request is looked up (agent.h).
 */
enum cac_policy {
	POLICY_SLOT = 0x1,
	POLICY_LIMITED_FIRST = 0x2, /* class 0's bit; class c's is this << c */
	POLICY_AGENTS = 0x10000,
	/* Some account is matched by a CLI rule, or by a called-number
	 * rule: a SIP request out of dialog is read for the users those
	 * rules compare (sip_user.h); without a CLI rule, its headers are
	 * not walked. */
	POLICY_CLI_RULES = 0x20000,
	POLICY_CALLED_RULES = 0x40000,
	POLICY_USER_RULES = POLICY_CLI_RULES | POLICY_CALLED_RULES,
	/* Some account or customer has max-sessions: an INVITE takes a
	 * slot, and the messages of a dialog that holds one go up
	 * (sessions.h). */
	POLICY_CAPACITY = 0x80000,
	/* The access lists hold a prefix or a MAC: a frame of a watched
	 * carrier is looked up in them before it is parsed (access.h). */
	POLICY_ACCESS_LISTS = 0x100000,
	/* Auto-deny is on: a frame of a watched carrier is looked up in the
	 * deny table, and a source's refusals are counted. */
	POLICY_AUTO_DENY = 0x200000,
};
_Static_assert(POLICY_AGENTS > (POLICY_LIMITED_FIRST << CAC_NUM_CLASSES), "agents above the limited classes");

/* The kinds of an authentication rule (docs/design.md, "Authentication
 * rules"): the first byte of a struct cac_user_key, and the order of
 * precedence (a CLI rule before a called-number rule before a source
 * prefix). CAC_USER_MAX bytes of a URI's user are kept; the user is
 * looked for within CAC_URI_SCAN_MAX bytes of the scheme, and so is the
 * '<' of a header value and the space after the method. */
enum cac_user_rule {
	CAC_RULE_SOURCE = 0,
	CAC_RULE_CLI = 1,
	CAC_RULE_CALLED = 2,
	CAC_USER_MAX = 32,
	CAC_URI_SCAN_MAX = 64,
};

/* How the automatic per-source bucket of a class tells sources apart. */
enum cac_source_key {
	CAC_SOURCE_IP = 0,       /* source address; IPv6 cut to a prefix */
	CAC_SOURCE_MAC = 1,      /* PPPoE: source MAC */
	CAC_SOURCE_MAC_VLAN = 2, /* PPPoE: source MAC and VLAN IDs */
	CAC_SOURCE_VLAN = 3,     /* PPPoE: VLAN IDs only */
};

/* The Cisco call types of the charge budget, and the classes each holds. */
enum cac_call_type {
	CAC_CALL_PPPOE = 0, /* pppoe-padi, pppoe-padr */
	CAC_CALL_VPDN = 1,  /* l2tp-sccrq, l2tp-icrq */
	CAC_CALL_SIP = 2,   /* sip-invite; no other SIP class is a call */
	CAC_NUM_CALL_TYPES = 3,
};

/* Charges in force are summed per tick of 100 ms; a ring remembers 4096
 * ticks, and lifetimes reach 300 s (3000 ticks), so the whole window of
 * the longest lifetime is always in the ring. */
enum cac_charge_ring_size {
	CAC_TICK_NS = 100000000,
	CAC_RING = 4096,
	CAC_MAX_LIFETIME_TICKS = 3000,
};
_Static_assert(CAC_MAX_LIFETIME_TICKS < CAC_RING, "a lifetime fits the ring");

/* What the fast path does while the control plane is stale. */
enum cac_on_stale {
	CAC_STALE_STATIC = 0, /* keep the last measurements */
	CAC_STALE_OPEN = 1,   /* ignore CPU and buffer measurements */
	CAC_STALE_CLOSED = 2, /* reject every call */
};

/* The capacities of the tables the control plane fills, and how much of
 * what the fast path sees it may hand up. */
enum cac_capacity {
	CAC_MAX_ACCOUNTS = 4096,
	CAC_MAX_CUSTOMERS = 1024,
	/* Session agents: known SIP peers, by address (a cac_prefix of
	 * 128 bits). */
	CAC_MAX_AGENTS = 256,
	CAC_MAX_AGENT_ADDRS = 1024,
	/* The response codes an agent's out-service list holds, from 300 to
	 * 699: bit (code - 300). */
	CAC_OUT_CODES_WORDS = 7,
	/* How much of a SIP message goes to user space with an event. */
	CAC_SIP_COPY = 1472,
	/* How much of a refused request's link-layer header goes with its
	 * event: Ethernet and the three VLAN tags the classifier walks. */
	CAC_SIP_L2_MAX = 28,
	/* Refused INVITEs a CPU of the egress program hands up a second;
	 * past that, one it would refuse goes on to the agent, which answers
	 * for itself, rather than wait for Timer B unanswered. */
	EGRESS_REFUSED_PER_SECOND = 1024,
	/* The limits of concurrent sessions (sessions.h): accounts', then
	 * customers', then session agents' (connections). */
	CAC_MAX_SESSION_LIMITS = CAC_MAX_ACCOUNTS + CAC_MAX_CUSTOMERS + CAC_MAX_AGENTS,
	/* No limit of concurrent sessions: a field of struct cac_session. */
	CAC_NO_SESSION_LIMIT = 0xffffffff,
	/* Messages of dialogs that hold a session a CPU of either program
	 * hands up a second; past that, one goes unseen, and its dialog is
	 * closed by its expiry if that was its BYE. */
	SESSION_EVENTS_PER_SECOND = 4096,
	/* The leases of fleet-scope limits (lease.h): the classes' and the
	 * environment's, then customers', then accounts', then the call
	 * admission limit's, in charge units times ticks held. */
	CAC_LEASE_CALL_ADMISSION = CAC_NUM_LEVELS + CAC_MAX_CUSTOMERS + CAC_MAX_ACCOUNTS,
	CAC_MAX_LEASES = CAC_LEASE_CALL_ADMISSION + 1,
};

/* How a frame is walked (parse.h): VLAN tags a per-source key holds (the
 * outer two), and tags walked to find the EtherType: a subscriber three
 * tags deep is still one a pppoe-server on a stacked VLAN device answers,
 * so it is classified, not passed unseen. Each depth is a path of its own
 * to the verifier, with an offset it knows, for all that follows: eight
 * cost Linux 6.1's verifier 290,000 instructions more than two, three cost
 * about 48,000. Surplus leading priority tags are taken out first
 * (priority.h), looking at CAC_MAX_STACK tags; any other tag beyond
 * CAC_MAX_TAGS is malformed. IPv6 extension headers walked before the UDP
 * header: Linux takes any number, so as many as the verifier bounds the
 * offsets of; a frame with more is malformed, never unseen. */
enum cac_frame_bound {
	CAC_MAX_VLANS = 2,
	CAC_MAX_TAGS = 3,
	CAC_MAX_EXTHDRS = 16,
	/* Tags looked at for priority tags to take out (priority.h). */
	CAC_MAX_STACK = 16,
};

/* The bounds of the SIP readers (sip_msg.h, sip_hdr.h): the To header must
 * start within SIP_SCAN_MAX bytes and SIP_MAX_LINES header lines, and its
 * tag within SIP_TO_MAX bytes of the colon and SIP_TO_STEPS reads of the
 * bytes that change what its value means; at most SIP_WS_MAX spaces or
 * tabs around ':', ';' and '='; at most SIP_LEAD_MAX leading bytes (SP,
 * HT, NUL, CR, LF: what Kamailio skips) before the first line, a word at
 * a time; a header value is hashed by its first SIP_HASH_MAX bytes. */
enum cac_sip_bound {
	SIP_SCAN_MAX = 2048,
	SIP_MAX_LINES = 64,
	SIP_TO_MAX = 256,
	SIP_TO_STEPS = 32,
	SIP_WS_MAX = 4,
	SIP_LEAD_MAX = 2048,
	SIP_HASH_MAX = 256,
};

enum cac_sip_event_kind {
	CAC_SIP_AGENT_RESPONSE = 1,
	CAC_SIP_REJECTED = 2,
	/* An INVITE the SIP server sent that the egress program refused on
	 * an agent's behalf: the event's code is its enum cac_egress_reason,
	 * and user space answers it from the agent (egress.h). */
	CAC_SIP_EGRESS_REFUSED = 3,
	/* A message, either way, of a dialog that holds a session
	 * (sessions.h): user space reads its answers and BYEs. */
	CAC_SIP_SESSION = 4,
};

/* Why the egress program refused an INVITE toward a session agent
 * (egress.h): the agent's connection limit, or the agent out of service
 * in every realm with fail-fast. Counted apart from the admission
 * pipeline's reasons, which the XDP program's counters are sized by. */
enum cac_egress_reason {
	CAC_EGRESS_CONNECTION = 0,
	CAC_EGRESS_AGENT_DOWN = 1,
	CAC_EGRESS_CAPACITY = 2, /* the agent at its max-sessions (sessions.h) */
	CAC_NUM_EGRESS_REASONS = 3,
};

/* The flags of an agent's egress settings (struct cac_agent_egress). */
enum cac_agent_flag {
	AGENT_FAIL_FAST = 1, /* on-out-of-service: fail-fast */
};

/* An agent's state, as the daemon writes it in the agent_state map. */
enum cac_agent_state {
	AGENT_OUT_OF_SERVICE = 1, /* out of service in every realm it may be sent to */
};

/* Reject records (reject.h): a CPU's new records per second, the family
 * of the record that counts, past them, every other source, and a CPU's
 * slots of records, a power of two. */
enum cac_reject_record {
	REJECT_NEW_PER_SECOND = 1024,
	CAC_SOURCE_OTHERS = 0xff,
	CAC_REJECT_SLOTS = 64,
};

/* INVITE retransmissions (invite.h): RFC 3261 Timer B (64 * T1), how long
 * a client retransmits an INVITE; the retransmissions of an admitted
 * INVITE passed uncharged (a client over UDP sends six within Timer B;
 * past this, a replay is charged anew); and a CPU's budget of refused
 * INVITE transactions remembered, per second. */
enum cac_retransmit {
	CAC_TIMER_B_S = 32,
	CAC_RETRANSMITS_MAX = 10,
	REFUSED_NEW_PER_SECOND = 512,
	/* How long after an admitted INVITE its CANCEL passes uncharged: a
	 * proxy's Timer C (RFC 3261 §16.6) is more than three minutes. */
	CAC_CANCEL_S = 180,
};
#define CAC_TIMER_B_NS (CAC_TIMER_B_S * 1000000000ULL)
#define CAC_CANCEL_NS (CAC_CANCEL_S * 1000000000ULL)

/* The bucket every verified dialog's requests are held by (dialog.h): a
 * real dialog sends a handful (ACK, PRACK, UPDATE, a re-INVITE a session
 * timer, INFOs for DTMF at most some ten a second); past it, a dialog's
 * requests are held by the sip-indialog limits as a stranger's are, so a
 * live dialog is never an unlimited path. */
enum cac_dialog_bucket {
	CAC_DIALOG_CPS = 20,
	CAC_DIALOG_BURST = 100,
	/* A dialog silent this long since its INVITE and its last verified
	 * request is no longer verified: its requests are held as a
	 * stranger's, which a call's late BYE passes within. */
	CAC_DIALOG_IDLE_S = 3600,
};
#define CAC_DIALOG_IDLE_NS (CAC_DIALOG_IDLE_S * 1000000000ULL)

enum cac_l2tp_dir {
	CAC_L2TP_TO_LNS = 0,
	CAC_L2TP_TO_LAC = 1,
};

/* L2TP tunnels (l2tp.h): one with no control message for this long is
 * gone (a tunnel's Hello comes every 60 s by default); one that saw a
 * StopCCN keeps its translation this long for the acknowledgements and
 * retransmissions of the StopCCN (RFC 2661 holds the tunnel 31 s). AVPs
 * looked through for the SCCRP's assigned ID: an SCCRP has a dozen. */
enum cac_l2tp_bound {
	CAC_L2TP_IDLE_S = 600,
	CAC_L2TP_CLOSE_HOLD_S = 60,
	L2TP_AVPS_MAX = 24,
};
#define CAC_L2TP_IDLE_NS (CAC_L2TP_IDLE_S * 1000000000ULL)
#define CAC_L2TP_CLOSE_HOLD_NS (CAC_L2TP_CLOSE_HOLD_S * 1000000000ULL)
