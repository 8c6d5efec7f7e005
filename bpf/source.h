/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Who sent a first packet: the key of its per-source bucket, and of its
 * account. Read from the frame only when a level needs it.
 */
#pragma once

#include "parse.h"

/* source_of fills *s with the source of a frame of class, as its class's
 * per-source key says. It returns 0 when the frame is too short, which a
 * classified frame never is. */
static __always_inline int source_of(struct frame *f, __u8 class, struct cac_class_limits *cl,
				     struct cac_source *s)
{
	void *data = f->data, *data_end = f->data_end;

	__builtin_memset(s, 0, sizeof(*s));
	s->class = class;
	if (f->family == 4) {
		struct iphdr *ip = data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > data_end)
			return 0;
		s->family = 4;
		__builtin_memcpy(s->addr, &ip->saddr, 4);
		return 1;
	}
	if (f->family == 6) {
		struct ipv6hdr *ip6 = data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > data_end)
			return 0;
		s->family = 6;
		__builtin_memcpy(s->addr, ip6->saddr, 16);
		/* Cut the address to the prefix that counts as one source. */
		__u32 bits = cl->ipv6_prefix;
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (bits >= 8)
				bits -= 8;
			else {
				s->addr[i] &= (__u8)(0xff00 >> bits);
				bits = 0;
			}
		}
		return 1;
	}

	/* PPPoE: the MAC, the VLAN IDs, or both. */
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return 0;
	if (cl->source_key != CAC_SOURCE_VLAN)
		__builtin_memcpy(s->addr, eth->src, 6);
	if (cl->source_key == CAC_SOURCE_MAC)
		return 1;
#pragma unroll
	for (int i = 0; i < CAC_MAX_VLANS; i++) {
		if (i >= f->vlans)
			break;
		struct vlanhdr *vh = data + sizeof(*eth) + i * sizeof(*vh);
		if ((void *)(vh + 1) > data_end)
			return 0;
		s->vlan[i] = bpf_ntohs(vh->tci) & 0x0fff;
	}
	return 1;
}

/* prefix_of is the account lookup key of an IP source: IPv4 is mapped
 * into IPv6, so that one trie holds both. */
static __always_inline void prefix_of(struct frame *f, struct cac_prefix *p)
{
	void *data = f->data, *data_end = f->data_end;

	__builtin_memset(p, 0, sizeof(*p));
	p->prefixlen = 128;
	if (f->family == 4) {
		struct iphdr *ip = data + (f->l3off & 0x3f);
		if ((void *)(ip + 1) > data_end)
			return;
		p->addr[10] = 0xff;
		p->addr[11] = 0xff;
		__builtin_memcpy(&p->addr[12], &ip->saddr, 4);
	} else if (f->family == 6) {
		struct ipv6hdr *ip6 = data + (f->l3off & 0x3f);
		if ((void *)(ip6 + 1) > data_end)
			return;
		__builtin_memcpy(p->addr, ip6->saddr, 16);
	}
}
