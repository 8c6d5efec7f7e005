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
#include "priority.h"
#include "verdict.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Never read: it puts the types of struct cac_exported (cac.h) in the
 * object's BTF, for bpf2go to export (-type). Its section is one that
 * neither cilium/ebpf nor the kernel loads. */
struct cac_exported cac_exported SEC(".cac_exported") __attribute__((used));

/* opaque_word returns w, as a value the verifier knows nothing of: what
 * a global function returns is any scalar to its caller. The classifier's
 * paths each carry constants of their own into verdict (where the IP
 * header is, the class); handed through here, they reach verdict as
 * the same unknown values, and the verifier walks it in far fewer states
 * than one for each path (docs/design.md, "The verifier's budget"). The asm keeps clang
 * from seeing that w comes back and using it in place of the result. */
__noinline __u64 opaque_word(__u64 w)
{
	asm volatile("" : "+r"(w));
	return w;
}

SEC("xdp")
int xdp_cac(struct xdp_md *ctx)
{
	strip_priority_tags(ctx);
	struct frame f = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.len = ctx->data_end - ctx->data,
	};
	int result = classify(ctx, &f);
	if (RESULT_KIND(result) == CAC_KIND_UNWATCHED)
		return XDP_PASS;
	if (RESULT_KIND(result) == CAC_KIND_DENIED)
		return denied_verdict(result);
	return verdict(ctx, opaque_word(verdict_where(&f)), opaque_word(result));
}
