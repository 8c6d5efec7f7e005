/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Recent Call-IDs (docs/design.md, "Retransmissions"): whether a Call-ID
 * may have had an INVITE transaction remembered within Timer B, in the
 * dialog table (admitted) or the refused table. A retransmission is only
 * ever one of those, so an INVITE whose slot says no is a new call, and
 * its two lookups, a cache miss or more each in tables of megabytes, are
 * not made: under a flood of new calls they were a quarter of a refused
 * INVITE's time.
 *
 * A slot is one byte, the time of the last transaction remembered of any
 * Call-ID that hashes to it: the coarse clock in units of 2^32 ns (about
 * 4.3 s), seven bits of it, and a low bit set once written. A slot written
 * within Timer B (32 s) is never more than eight units old, so the answer
 * is never "no" for a Call-ID one of the tables may answer for; it may be
 * "maybe" for one neither holds (another Call-ID of the slot, or a stamp
 * 128 units old), which only costs the lookups. An upgrade from a
 * version without the table stamps every slot at its own time
 * (maps.MarkAllRecent), so that copies of the INVITEs of its last seconds
 * are still found.
 */
#pragma once

#include "bpf_helpers.h"
#include "cac.h"
#include "maps.h"

/* Slots within Timer B are at most this many units old (2^32 ns each). */
#define RECENT_UNITS_MAX ((CAC_TIMER_B_NS >> 32) + 1)

/* recent_slot is the slot of a Call-ID's hash: line and byte from bits
 * of a multiply other than those that pick its dialog set. */
static __always_inline __u8 *recent_slot(__u64 callid)
{
	__u64 x = (callid ^ (callid >> 29)) * 0xbf58476d1ce4e5b9ULL;
	__u32 line = (__u32)(x >> 40) & 8191, slot = (__u32)(x >> 34) & (CAC_RECENT_SLOTS - 1);
	struct cac_recent_line *l = bpf_map_lookup_elem(&recent_calls, &line);
	return l ? &l->stamp[slot] : NULL;
}

static __always_inline __u8 recent_stamp(__u64 now)
{
	return (__u8)(((now >> 32) & 0x7f) << 1 | 1);
}

/* recent_note marks callid as having a transaction remembered at now.
 * Before the table's entry is written, so that a reader that finds the
 * entry finds the mark. An unchanged slot is not written again. */
static __always_inline void recent_note(__u64 callid, __u64 now)
{
	__u8 *s = recent_slot(callid);
	__u8 st = recent_stamp(now);
	if (s && *s != st)
		*s = st;
}

/* recent_maybe says whether callid may have had a transaction remembered
 * within Timer B of now. */
static __always_inline int recent_maybe(__u64 callid, __u64 now)
{
	__u8 *s = recent_slot(callid);
	if (!s)
		return 1;
	__u8 v = *s;
	return (v & 1) && (((now >> 32) - (v >> 1)) & 0x7f) <= RECENT_UNITS_MAX;
}
