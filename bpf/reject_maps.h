/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps of reject records (reject.h, docs/design.md "Reject records"):
 * the table, each CPU's slots, what the daemon has swept, the scratch a
 * record is built in, and each CPU's budget of new records. Each
 * attachment has its own; maps.h includes this where they belong.
 */
#pragma once

/* The reject records, by source, class, reason, second and CPU
 * (reject.h). A plain hash, preallocated: the daemon empties it every
 * second and it is sized for four seconds of every CPU's budget of new
 * records, so nothing needs pushing out, and a lookup writes nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct cac_reject_key);
	__type(value, struct cac_reject);
} rejects SEC(".maps");

/* A CPU's slots of reject records (reject.h), each a key and its record,
 * the shape of the scratch below: where a flood's records are counted
 * without the hash of the table above. A slot is taken again only once
 * the daemon has read the seconds it holds, which reject_swept says. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAC_REJECT_SLOTS);
	__type(key, __u32);
	__type(value, struct cac_reject_scratch);
} reject_slots SEC(".maps");

/* The last second whose records in reject_slots the daemon has read, on
 * every CPU (maps.SweepRejects); only the daemon writes it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} reject_swept SEC(".maps");

/* A CPU's scratch for the reject it records: its key and a new record
 * are built here rather than on the stack of refused_again, whose frame
 * counts with its callers' against the 512 bytes a call chain may take
 * (docs/design.md, "The verifier's budget"). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cac_reject_scratch);
} reject_scratch SEC(".maps");

/* A CPU's budget of new reject records this second, so that a flood on
 * one interface leaves the others theirs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reject_budget);
} reject_budget SEC(".maps");
