/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What a global function needs of a frame besides its bytes, packed into
 * scalar arguments: a BPF function takes five, and the verifier checks a
 * global one with unknown arguments, so a pointer into the frame or to a
 * struct frame cannot go along. Every packing of such an argument and its
 * unpacking are here, so that the two sides cannot drift apart.
 *
 * The frame word (verdict's where, and the egress program's SIP word):
 *   bits  0-5   l3off, the offset of the IP header (below 64: Ethernet
 *               and at most CAC_MAX_TAGS tags)
 *         6-15  udpoff, the offset of the UDP header of a SIP message
 *               (0 when it is past 1023: its message then goes to no
 *               event, sip_event.h)
 *        16-23  family, 4 or 6
 *        24-31  vlans, the VLAN tags in front of it (XDP)
 *        24-33  or a SIP response's code, for agent_response
 *        32     a first fragment (egress)
 *        34-47  msgoff, where the message starts
 *        48-63  msglen, its length
 * The egress program's L2TP word (where_pack_egress) keeps l3off in bits
 * 0-15 and no udpoff; its readers mask l3off to 6 bits.
 */
#pragma once

#include "uapi.h"
#include "shared.h"

/* The largest UDP header offset a frame word holds. */
#define WHERE_UDPOFF_MAX 0x3ff

/* where_pack is the frame word of a frame's fields. An IP header starts
 * within the first 64 bytes, so l3off has the low six bits of its 16, and
 * the UDP header's offset the next ten: the message itself may start much
 * later, after up to SIP_LEAD_MAX leading bytes. */
static __always_inline __u64 where_pack(__u32 l3off, __u32 family, __u32 vlans, __u32 msgoff, __u32 msglen,
					__u32 udpoff)
{
	return (__u64)(l3off & 0x3f) | (__u64)(udpoff & WHERE_UDPOFF_MAX) << 6 | (__u64)family << 16 |
	       (__u64)vlans << 24 |
	       (__u64)(msgoff & 0x3fff) << 34 | (__u64)(msglen & 0xffff) << 48;
}

/* where_pack_egress is the frame word of a frame going out: no VLAN tags,
 * and bit 32 set for a first fragment. Its arguments have the types of the
 * fields they come from: with wider ones, clang lays out tc_dialogs
 * otherwise. */
static __always_inline __u64 where_pack_egress(__u16 l3off, __u8 family, __u8 fragmented, __u32 msgoff,
					       __u32 msglen)
{
	return (__u64)l3off | (__u64)family << 16 | (__u64)fragmented << 32 | (__u64)(msgoff & 0x3fff) << 34 |
	       (__u64)(msglen & 0xffff) << 48;
}

static __always_inline __u32 where_l3off(__u64 where)
{
	return where & 0x3f;
}

static __always_inline __u32 where_udpoff(__u64 where)
{
	return (where >> 6) & WHERE_UDPOFF_MAX;
}

static __always_inline __u32 where_family(__u64 where)
{
	return (where >> 16) & 0xff;
}

static __always_inline __u32 where_vlans(__u64 where)
{
	return (where >> 24) & 0xff;
}

static __always_inline __u32 where_code(__u64 where)
{
	return (where >> 24) & 0x3ff;
}

static __always_inline __u32 where_fragmented(__u64 where)
{
	return (where >> 32) & 1;
}

static __always_inline __u32 where_msgoff(__u64 where)
{
	return (where >> 34) & 0x3fff;
}

static __always_inline __u32 where_msglen(__u64 where)
{
	return (where >> 48) & 0xffff;
}

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
 * and family, as the source and agent functions want it. */
static __always_inline __u64 where_ip(__u64 where)
{
	return where & 0xffffff;
}

/* where_source is where_ip with the VLAN tags: what names any source. */
static __always_inline __u64 where_source(__u64 where)
{
	return where & 0xffffffff;
}

/* where_msg is the part of a frame word that says where the message is. */
static __always_inline __u64 where_msg(__u64 where)
{
	return where & (0xffffffffULL << 32);
}

/* where_with_code puts a response's code in place of the VLAN tags. */
static __always_inline __u64 where_with_code(__u64 where, __u64 code)
{
	return where_ip(where) | code << 24 | where_msg(where);
}


/*
 * The admission word admit_call takes: the class in bits 0-7, l3off in
 * 8-23, vlans in 24-31, family in 32-39, the slot of limits in bit 40,
 * in bit 41 whether session agents are looked up, and in bit 42 whether
 * user_scratch holds the account of an authentication rule (sip_user.h).
 */
static __always_inline __u64 admit_pack(__u64 class, __u64 l3off, __u64 vlans, __u64 family, __u64 slot,
					__u64 agents)
{
	return class | l3off << 8 | vlans << 24 | family << 32 | slot << 40 | agents << 41;
}

/* admit_with_user sets bit 42 of an admission word. */
static __always_inline __u64 admit_with_user(__u64 w, __u64 user)
{
	return w | (user & 1) << 42;
}

static __always_inline __u32 admit_class(__u64 w)
{
	return w & 0xff;
}

static __always_inline __u32 admit_l3off(__u64 w)
{
	return (w >> 8) & 0xffff;
}

static __always_inline __u32 admit_vlans(__u64 w)
{
	return (w >> 24) & 0xff;
}

static __always_inline __u32 admit_family(__u64 w)
{
	return (w >> 32) & 0xff;
}

static __always_inline __u32 admit_slot(__u64 w)
{
	return (w >> 40) & POLICY_SLOT;
}

static __always_inline __u32 admit_agents(__u64 w)
{
	return (w >> 41) & 1;
}

static __always_inline __u32 admit_user(__u64 w)
{
	return (w >> 42) & 1;
}

/* A code and its argument in one word, the code in the low byte: the
 * reason of a refusal and its class (refused_again), what l2tp_from_lac is
 * asked to do and the reason L2TP_REFUSE records. */
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

/* A SIP message as the INVITE functions take it: its offset in bits 0-15,
 * its length in 16-31. */
static __always_inline __u64 msg_pack(__u64 msgoff, __u64 msglen)
{
	return msgoff | msglen << 16;
}

static __always_inline __u32 msg_off(__u64 msg)
{
	return msg & 0xffff;
}

static __always_inline __u32 msg_len(__u64 msg)
{
	return (msg >> 16) & 0xffff;
}
