/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Who sent a first packet: the key of its per-source bucket, and of its
 * account. Read from the frame only when a level needs it.
 */
#pragma once

#include "parse.h"

/* A source key as six 32-bit words: how source_of writes it. */
union source_words {
	struct cac_source s;
	__u32 w[6];
};
_Static_assert(sizeof(struct cac_source) == 6 * sizeof(__u32), "a source key is six words");

/*
 * source_store writes a source key a word at a time, from the address
 * in memory order (bytes 0-7 in a, 8-15 in b) and the VLAN IDs. The key's
 * readers (the hash of a table, the fold of a reject slot) read it a word
 * at a time: a word built of smaller stores cannot be forwarded from the
 * store buffer, and each such read waited for the stores to reach the
 * cache (BENCHMARKS.md: refused_again went from 17.5 % of a refused PADI
 * flood's receiving CPU to 9.4 %).
 */
static __always_inline void source_store(struct cac_source *s, __u8 class, __u8 family, __u32 vlan0,
					 __u32 vlan1, __u64 a, __u64 b)
{
	union source_words *u = (union source_words *)s;
	u->w[0] = class | (__u32)family << 8 | vlan0 << 16;
	u->w[1] = (vlan1 & 0xffff) | (__u32)(a & 0xffff) << 16;
	u->w[2] = a >> 16;
	u->w[3] = (a >> 48) | (__u32)(b & 0xffff) << 16;
	u->w[4] = b >> 16;
	u->w[5] = b >> 48;
}

/* prefix_cut keeps the first bits of an IPv6 address whose bytes 0-7 are
 * in *a and 8-15 in *b, in memory order. */
static __always_inline void prefix_cut(__u64 *a, __u64 *b, __u32 bits)
{
	if (bits >= 128)
		return;
	/* The mask in network order, then in memory order. */
	__u64 hi = bits >= 64 ? ~0ULL : bits ? ~0ULL << (64 - bits) : 0;
	__u64 lo = bits <= 64 ? 0 : ~0ULL << (128 - bits);
	*a &= bpf_cpu_to_be64(hi);
	*b &= bpf_cpu_to_be64(lo);
}

/* source_of fills *s with the source of a frame of class, as its class's
 * per-source key says. It returns 0 when the frame is too short, which a
 * classified frame never is. s must be 4-byte aligned (source_store). */
static __always_inline int source_of(struct frame *f, __u8 class, struct cac_class_limits *cl,
				     struct cac_source *s)
{
	void *data = f->data, *data_end = f->data_end;
	__u64 a = 0, b = 0;

	if (f->family == 4) {
		struct iphdr *ip = data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > data_end)
			return 0;
		__u32 saddr;
		__builtin_memcpy(&saddr, &ip->saddr, 4);
		source_store(s, class, 4, 0, 0, saddr, 0);
		return 1;
	}
	if (f->family == 6) {
		struct ipv6hdr *ip6 = data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > data_end)
			return 0;
		__builtin_memcpy(&a, &ip6->saddr[0], 8);
		__builtin_memcpy(&b, &ip6->saddr[8], 8);
		/* Cut the address to the prefix that counts as one source. */
		prefix_cut(&a, &b, cl->ipv6_prefix);
		source_store(s, class, 6, 0, 0, a, b);
		return 1;
	}

	/* PPPoE: the MAC, the VLAN IDs, or both. */
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return 0;
	if (cl->source_key != CAC_SOURCE_VLAN) {
		__u16 m01;
		__u32 m25;
		__builtin_memcpy(&m01, &eth->src[0], 2);
		__builtin_memcpy(&m25, &eth->src[2], 4);
		a = m01 | (__u64)m25 << 16;
	}
	__u32 vlan[CAC_MAX_VLANS] = {};
	if (cl->source_key != CAC_SOURCE_MAC) {
#pragma unroll
		for (int i = 0; i < CAC_MAX_VLANS; i++) {
			if (i >= f->vlans)
				break;
			struct vlanhdr *vh = data + sizeof(*eth) + i * sizeof(*vh);
			if ((void *)(vh + 1) > data_end)
				return 0;
			vlan[i] = bpf_ntohs(vh->tci) & 0x0fff;
		}
	}
	source_store(s, class, 0, vlan[0], vlan[1], a, 0);
	return 1;
}

/*
 * A trie key (struct cac_prefix) placed so that its address starts on a
 * word: the trie reads the address a word at a time, and prefix_of
 * writes it so, the two words the reads find whole (source_store says
 * why that matters). p is the key to look up.
 */
union prefix_words {
	struct {
		__u32 _lead;
		struct cac_prefix p;
	};
	__u64 w[3];
};
_Static_assert(sizeof(union prefix_words) == 3 * sizeof(__u64), "a trie key and its lead are three words");

/* prefix_of is the account lookup key of an IP source: IPv4 is mapped
 * into IPv6, so that one trie holds both. A frame too short for its IP
 * header gets the key ::/128. */
static __always_inline void prefix_of(struct frame *f, union prefix_words *u)
{
	void *data = f->data, *data_end = f->data_end;

	u->w[0] = (__u64)128 << 32; /* prefixlen, after the lead */
	u->w[1] = 0;
	u->w[2] = 0;
	if (f->family == 4) {
		struct iphdr *ip = data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > data_end)
			return;
		__u32 saddr;
		__builtin_memcpy(&saddr, &ip->saddr, 4);
		u->w[2] = 0xffff0000ULL | (__u64)saddr << 32; /* ::ffff:a.b.c.d in memory order */
	} else if (f->family == 6) {
		struct ipv6hdr *ip6 = data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > data_end)
			return;
		__u64 a, b;
		__builtin_memcpy(&a, &ip6->saddr[0], 8);
		__builtin_memcpy(&b, &ip6->saddr[8], 8);
		u->w[1] = a;
		u->w[2] = b;
	}
}
