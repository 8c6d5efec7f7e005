/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Priority tags (docs/design.md, "Outer layers"). Linux takes any number of
 * VLAN tags with VID 0 out of a frame before it hands what is inside on,
 * so a frame with more tags than the classifier walks (CAC_MAX_TAGS) may
 * still reach a SIP server. strip_priority_tags takes the leading priority
 * tags of such a frame out, as many as put it within the walk, before the
 * classifier reads it: what the host gets is what Linux would have made of
 * it anyway. A frame that still has too many tags is malformed.
 * classify.StripPriorityTags is the same in Go.
 */
#pragma once

#include "parse.h"

/*
 * strip_priority_tags counts the tags of the frame (at most CAC_MAX_STACK)
 * and its leading priority tags; when there are more tags than
 * CAC_MAX_TAGS it moves the MAC addresses over as many leading priority
 * tags as are too many, and moves the frame's start there. A frame with no
 * tag costs a load of its EtherType and the VLAN check.
 */
static __always_inline void strip_priority_tags(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || !is_vlan(bpf_ntohs(eth->proto)))
		return;

	__u32 tags = 0, lead = 0, leading = 1;
#pragma unroll
	for (int i = 0; i < CAC_MAX_STACK; i++) {
		struct vlanhdr *vh = data + sizeof(*eth) + i * sizeof(*vh);
		if ((void *)(vh + 1) > data_end)
			break;
		tags++;
		if (leading && (bpf_ntohs(vh->tci) & 0x0fff) == 0)
			lead++;
		else
			leading = 0;
		if (!is_vlan(bpf_ntohs(vh->proto)))
			break;
	}
	if (tags <= CAC_MAX_TAGS || !lead)
		return;
	__u32 n = tags - CAC_MAX_TAGS;
	if (n > lead)
		n = lead;
	__u32 shift = n * sizeof(struct vlanhdr);
	barrier_var(shift);
	if (shift > CAC_MAX_STACK * sizeof(struct vlanhdr))
		return;
	__u8 macs[12];
	__builtin_memcpy(macs, data, sizeof(macs));
	void *to = data + shift;
	if (to + sizeof(macs) > data_end)
		return;
	__builtin_memcpy(to, macs, sizeof(macs));
	bpf_xdp_adjust_head(ctx, (int)shift);
}
