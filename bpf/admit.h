/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The admission pipeline of DESIGN.md §4 for a first packet of a class, as
 * far as it is built: the class bucket, then the environment bucket. The
 * first level that fails names the reason, and a rejected call consumes
 * nothing at any level: every level is checked before any is taken, and a
 * take that loses a race to another CPU gives back what was taken before.
 */
#pragma once

#include "bucket.h"
#include "clock.h"

/* No reason: the call is admitted. */
#define ADMITTED (-1)

static __always_inline int admit(__u32 class)
{
	__u32 zero = 0;
	struct cac_limits *lim = bpf_map_lookup_elem(&limits, &zero);
	if (!lim || class >= CAC_NUM_CLASSES)
		return ADMITTED;
	struct cac_limit *cl = &lim->level[class];
	struct cac_limit *el = &lim->level[CAC_LEVEL_ENVIRONMENT];

	/* Nothing to check: no clock to read, no bucket to touch. */
	if (!cl->interval_ns && !el->interval_ns)
		return ADMITTED;
	struct cac_buckets *bk = bpf_map_lookup_elem(&buckets, &zero);
	if (!bk)
		return ADMITTED;
	struct cac_bucket *cb = &bk->level[class];
	struct cac_bucket *eb = &bk->level[CAC_LEVEL_ENVIRONMENT];
	__u64 now = now_ns();

	if (!bucket_conforms(cl, cb, now))
		return CAC_REASON_CLASS;
	if (!bucket_conforms(el, eb, now))
		return CAC_REASON_ENVIRONMENT;

	if (!bucket_take(cl, cb, now))
		return CAC_REASON_CLASS;
	if (!bucket_take(el, eb, now)) {
		bucket_give_back(cl, cb);
		return CAC_REASON_ENVIRONMENT;
	}
	return ADMITTED;
}
