/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What a global function needs of a frame besides its bytes, packed into
 * scalar arguments: a BPF function takes five, and the verifier checks a
 * global one with unknown arguments, so a pointer into the frame or to a
 * struct frame cannot go along. Every packing of such an argument and its
 * unpacking are here, so that the two sides cannot drift apart.
 *
 * The frame word, one layout for every function of both programs that
 * takes one (where), each field in bits of its own:
 *   bits  0-5   l3off, the offset of the IP header (Ethernet and at most
 *               CAC_MAX_TAGS tags: below 64)
 *         6-15  udpoff, the offset of the UDP header of a SIP message (0
 *               when it is past WHERE_UDPOFF_MAX: its message then goes
 *               to no event, sip_event.h)
 *        16-19  family, 4 or 6
 *        20-23  vlans, the VLAN tags in front of the IP header (XDP)
 *        24-27  class, of a call admit_call judges (where_admit)
 *        28     slot, of the limits in force (admit_call)
 *        29     agents, whether session agents are looked up (admit_call)
 *        30     user, whether user_scratch holds the account of an
 *               authentication rule (admit_call, sip_user.h)
 *        31     fragmented, a first fragment (egress L2TP)
 *        32-45  msgoff, where the message starts (SIP_MSG_OFF_MAX)
 *        46-61  msglen, its length, or for L2TP the bytes of the payload
 *               at hand
 * Each field's place is its WHERE_*_AT and WHERE_*_BITS; the assertions
 * below hold the fields to 64 bits, apart, in this order, and wide enough
 * for what goes in them.
 */
#pragma once

#include "uapi.h"
#include "shared.h"
#include "sip_msg.h"

#define WHERE_L3OFF_AT 0
#define WHERE_L3OFF_BITS 6
#define WHERE_UDPOFF_AT 6
#define WHERE_UDPOFF_BITS 10
#define WHERE_FAMILY_AT 16
#define WHERE_FAMILY_BITS 4
#define WHERE_VLANS_AT 20
#define WHERE_VLANS_BITS 4
#define WHERE_CLASS_AT 24
#define WHERE_CLASS_BITS 4
#define WHERE_SLOT_AT 28
#define WHERE_SLOT_BITS 1
#define WHERE_AGENTS_AT 29
#define WHERE_AGENTS_BITS 1
#define WHERE_USER_AT 30
#define WHERE_USER_BITS 1
#define WHERE_FRAGMENTED_AT 31
#define WHERE_FRAGMENTED_BITS 1
#define WHERE_MSGOFF_AT 32
#define WHERE_MSGOFF_BITS 14
#define WHERE_MSGLEN_AT 46
#define WHERE_MSGLEN_BITS 16

/* The largest value a field holds, its bits in a word, one field's value
 * out of a word and into one. */
#define WHERE_MAX(f) ((1ULL << WHERE_##f##_BITS) - 1)
#define WHERE_FIELD(f) (WHERE_MAX(f) << WHERE_##f##_AT)
#define WHERE_GET(w, f) ((__u32)(((w) >> WHERE_##f##_AT) & WHERE_MAX(f)))
#define WHERE_PUT(v, f) (((__u64)(v) & WHERE_MAX(f)) << WHERE_##f##_AT)

/* The fields in order, each after the one before it ends. */
#define WHERE_END(f) (WHERE_##f##_AT + WHERE_##f##_BITS)
_Static_assert(WHERE_L3OFF_AT == 0 && WHERE_END(L3OFF) <= WHERE_UDPOFF_AT &&
		       WHERE_END(UDPOFF) <= WHERE_FAMILY_AT && WHERE_END(FAMILY) <= WHERE_VLANS_AT &&
		       WHERE_END(VLANS) <= WHERE_CLASS_AT && WHERE_END(CLASS) <= WHERE_SLOT_AT &&
		       WHERE_END(SLOT) <= WHERE_AGENTS_AT && WHERE_END(AGENTS) <= WHERE_USER_AT &&
		       WHERE_END(USER) <= WHERE_FRAGMENTED_AT && WHERE_END(FRAGMENTED) <= WHERE_MSGOFF_AT &&
		       WHERE_END(MSGOFF) <= WHERE_MSGLEN_AT && WHERE_END(MSGLEN) <= 64,
	       "the frame word's fields lie apart, in order, within 64 bits");
/* And no two share a bit, whatever the order: their bits together are
 * as many as their widths added up. */
#define WHERE_ALL                                                                                     \
	(WHERE_FIELD(L3OFF) | WHERE_FIELD(UDPOFF) | WHERE_FIELD(FAMILY) | WHERE_FIELD(VLANS) |        \
	 WHERE_FIELD(CLASS) | WHERE_FIELD(SLOT) | WHERE_FIELD(AGENTS) | WHERE_FIELD(USER) |           \
	 WHERE_FIELD(FRAGMENTED) | WHERE_FIELD(MSGOFF) | WHERE_FIELD(MSGLEN))
_Static_assert(__builtin_popcountll(WHERE_ALL) ==
		       WHERE_L3OFF_BITS + WHERE_UDPOFF_BITS + WHERE_FAMILY_BITS + WHERE_VLANS_BITS +
			       WHERE_CLASS_BITS + WHERE_SLOT_BITS + WHERE_AGENTS_BITS + WHERE_USER_BITS +
			       WHERE_FRAGMENTED_BITS + WHERE_MSGOFF_BITS + WHERE_MSGLEN_BITS,
	       "no bit of the frame word in two fields");
/* What goes in each field fits it. */
_Static_assert(sizeof(struct ethhdr) + CAC_MAX_TAGS * sizeof(struct vlanhdr) <= WHERE_MAX(L3OFF),
	       "l3off: Ethernet and CAC_MAX_TAGS tags");
_Static_assert(6 <= WHERE_MAX(FAMILY), "family: 4 or 6");
_Static_assert(CAC_MAX_TAGS <= WHERE_MAX(VLANS), "vlans: at most CAC_MAX_TAGS");
_Static_assert(CAC_NUM_CLASSES - 1 <= WHERE_MAX(CLASS), "class: every class");
_Static_assert(POLICY_SLOT <= WHERE_MAX(SLOT), "slot: the policy word's slot bit");
_Static_assert(SIP_MSG_OFF_MAX == WHERE_MAX(MSGOFF), "msgoff: as far as the SIP readers go");
_Static_assert(0xffff == WHERE_MAX(MSGLEN), "msglen: a UDP payload's");

/* The largest UDP header offset a frame word holds. */
#define WHERE_UDPOFF_MAX WHERE_MAX(UDPOFF)

/* where_pack is the frame word of a frame's fields: the admission fields
 * zero (where_admit sets them). udpoff past WHERE_UDPOFF_MAX goes as 0. */
static __always_inline __u64 where_pack(__u32 l3off, __u32 udpoff, __u32 family, __u32 vlans, __u32 fragmented,
					__u32 msgoff, __u32 msglen)
{
	return WHERE_PUT(l3off, L3OFF) | WHERE_PUT(udpoff > WHERE_UDPOFF_MAX ? 0 : udpoff, UDPOFF) |
	       WHERE_PUT(family, FAMILY) | WHERE_PUT(vlans, VLANS) | WHERE_PUT(fragmented, FRAGMENTED) |
	       WHERE_PUT(msgoff, MSGOFF) | WHERE_PUT(msglen, MSGLEN);
}

/* where_admit is the frame word where with the admission fields admit_call
 * reads: the class, the slot of limits in force, whether session agents
 * are looked up and whether user_scratch holds a rule's account. */
static __always_inline __u64 where_admit(__u64 where, __u32 class, __u32 slot, __u32 agents, __u32 user)
{
	return where | WHERE_PUT(class, CLASS) | WHERE_PUT(slot, SLOT) | WHERE_PUT(agents, AGENTS) |
	       WHERE_PUT(user, USER);
}

/* where_l3off, where_udpoff and the others: one field of a frame word. */
#define WHERE_ACCESSOR(name, f)                                                                    \
	static __always_inline __u32 where_##name(__u64 where)                                     \
	{                                                                                          \
		return WHERE_GET(where, f);                                                        \
	}
WHERE_ACCESSOR(l3off, L3OFF)
WHERE_ACCESSOR(udpoff, UDPOFF)
WHERE_ACCESSOR(family, FAMILY)
WHERE_ACCESSOR(vlans, VLANS)
WHERE_ACCESSOR(class, CLASS)
WHERE_ACCESSOR(slot, SLOT)
WHERE_ACCESSOR(agents, AGENTS)
WHERE_ACCESSOR(user, USER)
WHERE_ACCESSOR(fragmented, FRAGMENTED)
WHERE_ACCESSOR(msgoff, MSGOFF)
WHERE_ACCESSOR(msglen, MSGLEN)

/* where_frame is the struct frame (parse.h) of the frame word where, on
 * the packet of ctx: an xdp_md or an skb, which both have data and
 * data_end. */
#define where_frame(ctx, where)                                                                   \
	((struct frame){                                                                           \
		.data = (void *)(long)(ctx)->data,                                                 \
		.data_end = (void *)(long)(ctx)->data_end,                                         \
		.l3off = where_l3off(where),                                                       \
		.family = where_family(where),                                                     \
		.msgoff = where_msgoff(where),                                                     \
		.msglen = where_msglen(where),                                                     \
		.udpoff = where_udpoff(where),                                                     \
	})

/* where_ip is the part of a frame word that names the IP header, l3off
 * and family (with udpoff), as the source and agent functions want it. */
static __always_inline __u64 where_ip(__u64 where)
{
	return where & (WHERE_FIELD(L3OFF) | WHERE_FIELD(UDPOFF) | WHERE_FIELD(FAMILY));
}

/* where_source is where_ip with the VLAN tags: what names any source. */
static __always_inline __u64 where_source(__u64 where)
{
	return where & (WHERE_FIELD(L3OFF) | WHERE_FIELD(UDPOFF) | WHERE_FIELD(FAMILY) | WHERE_FIELD(VLANS));
}

/* where_msg is the part of a frame word that says where the message is. */
static __always_inline __u64 where_msg(__u64 where)
{
	return where & (WHERE_FIELD(MSGOFF) | WHERE_FIELD(MSGLEN));
}

/* A code and its argument in one word, the code in the low byte: the
 * reason of a refusal and its class (refused_again), what l2tp_from_lac is
 * asked to do and the reason L2TP_REFUSE records. */
_Static_assert(CAC_NUM_REASONS <= 0xff, "a reason fits the code's byte");

static __always_inline __u32 code_pack(__u32 code, __u32 arg)
{
	return code | arg << 8;
}

static __always_inline __u32 code_of(__u32 w)
{
	return w & 0xff;
}

static __always_inline __u32 code_arg(__u32 w)
{
	return w >> 8;
}
