//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdp_cac: call admission control at the NIC. It recognises the first packet
 * of a new PPPoE, L2TP or SIP session (classify.h), and verdict.h admits
 * or drops it against the token buckets of docs/design.md "Admission"
 * (admit.h), records a reject (reject.h) and counts it (stats.h); every
 * other frame leaves after a few loads with no write at all.
 */
#include "uapi.h"
#include "bpf_helpers.h"
#include "cac.h"
#include "classify.h"
#include "verdict.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Never read: it puts the types of struct cac_exported (cac.h) in the
 * object's BTF, for bpf2go to export (-type). Its section is one that
 * neither cilium/ebpf nor the kernel loads. */
struct cac_exported cac_exported SEC(".cac_exported") __attribute__((used));

SEC("xdp")
int xdp_cac(struct xdp_md *ctx)
{
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.len = ctx->data_end - ctx->data,
	};
	int result = classify(ctx, &f);
	if (RESULT_KIND(result) == CAC_KIND_UNWATCHED)
		return XDP_PASS;
	return verdict(ctx, verdict_where(&f), result);
}
