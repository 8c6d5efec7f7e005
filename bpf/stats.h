/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The per-CPU counters of an attachment (the stats map): plain increments,
 * no atomics, no shared cache lines. verdict.h counts every watched frame;
 * the code writing the reject records and the SIP ring buffer, deep inside
 * admission, counts here what found no room.
 */
#pragma once

#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"

/* lost_reject_record counts a reject the records table took in no record
 * (it had no room): the reject itself is counted as always, but the log
 * will not have it. */
static __always_inline void lost_reject_record(void)
{
	__u32 zero = 0;
	struct cac_stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (st)
		st->reject_records_lost++;
}

/* lost_sip_event counts a SIP message a full ring buffer refused. */
static __always_inline void lost_sip_event(void)
{
	__u32 zero = 0;
	struct cac_stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (st)
		st->sip_events_lost++;
}
