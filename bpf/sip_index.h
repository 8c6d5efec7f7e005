/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One walk over a SIP request's header lines (docs/design.md, "SIP in one
 * pass"). The classifier's search for To headers (sip.h) also notes where
 * the first Call-ID, CSeq and Via are, and goes on past an untagged To
 * until it has all three when the request is an INVITE. It leaves them in
 * this CPU's sip_index, and the readers (sip_callid and sip_txn_hash, and
 * the walks sip_find_txn and sip_find_callid they fall back on) read them
 * there instead of walking the lines again. Only the XDP program keeps an
 * index; the egress program walks.
 *
 * The index is of one message: the classifier clears it for every SIP
 * message before it reads one, and its key, the message's offset and
 * length, must match what a reader asks about.
 */
#pragma once

#include "maps.h"
#include "sip_msg.h"

/* What sip_index_found says when the index does not hold the message: no
 * result of sip_find_txn, whose slots hold offsets below 4096. */
#define SIP_INDEX_MISS (~0ULL)

#ifndef CAC_EGRESS

static __always_inline __u64 sip_index_key(__u64 moff, __u64 mlen)
{
	return 1ULL << 63 | (mlen & 0xffff) << 16 | (moff & 0xffff);
}

/* sip_index_clear forgets the message this CPU read last. */
static __always_inline void sip_index_clear(void)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (ix) {
		ix->key = 0;
		ix->txn_key = 0;
		ix->callid_key = 0;
	}
}

/* sip_index_callid sets *callid to the hash of the message's Call-ID kept
 * before, and reports whether there was one. */
static __always_inline int sip_index_callid(__u64 moff, __u64 mlen, __u64 *callid)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (!ix || ix->callid_key != sip_index_key(moff, mlen))
		return 0;
	*callid = ix->callid;
	return 1;
}

/* sip_index_keep_callid keeps the hash of the message's Call-ID. */
static __always_inline void sip_index_keep_callid(__u64 moff, __u64 mlen, __u64 callid)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (ix) {
		ix->callid = callid;
		ix->callid_key = sip_index_key(moff, mlen);
	}
}

/* sip_index_txn sets *callid and *txn to what sip_txn hashed of the
 * message before, and reports whether it did. */
static __always_inline int sip_index_txn(__u64 moff, __u64 mlen, __u64 *callid, __u64 *txn)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (!ix || ix->txn_key != sip_index_key(moff, mlen))
		return 0;
	*callid = ix->callid;
	*txn = ix->txn;
	return 1;
}

/* sip_index_keep_txn keeps what sip_txn hashed of the message. */
static __always_inline void sip_index_keep_txn(__u64 moff, __u64 mlen, __u64 callid, __u64 txn)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (ix) {
		ix->callid = callid;
		ix->txn = txn;
		ix->txn_key = ix->callid_key = sip_index_key(moff, mlen);
	}
}

/* sip_indexed keeps found, sip_find_txn's answer for the message, and
 * returns ret: a global function, so that each way out of the classifier's
 * walk costs the verifier one call. */
__noinline int sip_indexed(__u64 moff, __u64 mlen, __u64 found, int ret)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (ix) {
		ix->found = found;
		ix->key = sip_index_key(moff, mlen);
	}
	return ret;
}

/* sip_index_found returns what sip_find_txn would for the message, or
 * SIP_INDEX_MISS when the index does not hold it. */
static __always_inline __u64 sip_index_found(__u64 moff, __u64 mlen)
{
	__u32 zero = 0;
	struct cac_sip_index *ix = bpf_map_lookup_elem(&sip_index, &zero);
	if (ix && ix->key == sip_index_key(moff, mlen))
		return ix->found;
	return SIP_INDEX_MISS;
}

#else /* the egress program keeps no index */

static __always_inline void sip_index_clear(void)
{
}

static __always_inline int sip_indexed(__u64 moff, __u64 mlen, __u64 found, int ret)
{
	return ret;
}

static __always_inline __u64 sip_index_found(__u64 moff, __u64 mlen)
{
	return SIP_INDEX_MISS;
}

static __always_inline int sip_index_txn(__u64 moff, __u64 mlen, __u64 *callid, __u64 *txn)
{
	return 0;
}

static __always_inline void sip_index_keep_txn(__u64 moff, __u64 mlen, __u64 callid, __u64 txn)
{
}

static __always_inline int sip_index_callid(__u64 moff, __u64 mlen, __u64 *callid)
{
	return 0;
}

static __always_inline void sip_index_keep_callid(__u64 moff, __u64 mlen, __u64 callid)
{
}

#endif /* CAC_EGRESS */
