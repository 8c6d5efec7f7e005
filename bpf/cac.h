/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared with Go. bpf2go turns each of them into a Go type (-type), and
 * a Go test holds the Go names of classes and reasons to these numbers.
 */
#pragma once

#include "uapi.h"

/* The first packets of a new session that xdpcac admits or drops. */
enum cac_class {
	CAC_CLASS_PPPOE_PADI = 0,
	CAC_CLASS_PPPOE_PADR = 1,
	CAC_CLASS_L2TP_SCCRQ = 2,
	CAC_CLASS_L2TP_ICRQ = 3,
	CAC_CLASS_SIP_INVITE = 4,
	CAC_CLASS_SIP_OPTIONS = 5,
	CAC_NUM_CLASSES = 6,
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
	CAC_NUM_REASONS = 11,
};

/* What the classifier made of a frame. */
enum cac_verdict_kind {
	CAC_KIND_UNWATCHED = 0,  /* not on a watched carrier: passed, never counted */
	CAC_KIND_CLASS = 1,      /* first packet of a session of a class */
	CAC_KIND_OTHER = 2,      /* on a watched carrier, but opens no session */
	CAC_KIND_INDIALOG = 3,   /* SIP request inside an existing dialog */
	CAC_KIND_FRAGMENT = 4,   /* non-first fragment of a UDP datagram */
	CAC_KIND_MALFORMED = 5,  /* a watched carrier, truncated or inconsistent */
};

/* What a UDP destination port carries. */
enum cac_port_kind {
	CAC_PORT_NONE = 0,
	CAC_PORT_L2TP = 1,
	CAC_PORT_SIP = 2,
};

struct cac_class_stats {
	__u64 admitted;
	__u64 rejected[CAC_NUM_REASONS];
};

/* Per-CPU counters; seen and rejected are sums that Go derives. */
struct cac_stats {
	struct cac_class_stats classes[CAC_NUM_CLASSES];
	__u64 sip_indialog;
	__u64 fragment;
	__u64 malformed;
	__u64 passed_other;
};

/* Index of each bucket in the limits and buckets maps: one per class,
 * then the environment's. Source, account and customer buckets come later. */
enum cac_level {
	CAC_LEVEL_ENVIRONMENT = 6,
	CAC_NUM_LEVELS = 7,
};
_Static_assert(CAC_LEVEL_ENVIRONMENT == CAC_NUM_CLASSES, "levels: one per class, then environment");

/* A token bucket as GCRA sees it: one call per interval_ns, and a call
 * conforms while the theoretical arrival time is at most tolerance_ns
 * ahead of now, i.e. (burst - 1) intervals. interval_ns 0 is unlimited. */
struct cac_limit {
	__u64 interval_ns;
	__u64 tolerance_ns;
};

/* A bucket's state: its theoretical arrival time, updated with CAS. Zero
 * starts it full. */
struct cac_bucket {
	__u64 tat_ns;
};

/* Every level's limit in one map value, so one lookup finds them all. */
struct cac_limits {
	struct cac_limit level[CAC_NUM_LEVELS];
};

/* Every level's bucket in one map value, likewise. */
struct cac_buckets {
	struct cac_bucket level[CAC_NUM_LEVELS];
};

/* Run-time settings, written whole by the control plane. */
struct cac_settings {
	__u8 malformed_drop;
	__u8 _pad[7];
};

/* One byte per UDP destination port: an enum cac_port_kind. */
struct cac_ports {
	__u8 kind[65536];
};
