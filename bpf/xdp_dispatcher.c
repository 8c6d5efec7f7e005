//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdp_dispatcher: the program that runs several XDP programs on one
 * interface by the multi-program protocol of libxdp (xdp-tools), so that
 * xdpcac and xdp-filter, xdp-loader or any libxdp user share an interface
 * (docs/design.md, "Sharing an interface").
 *
 * What another tool reads of it is the protocol, and must stay as it is:
 * the program's name, a single read-only map (.rodata) holding conf, whose
 * layout and magic are libxdp's struct xdp_dispatcher_config of version 2,
 * and the slot functions prog0..prog9, each replaced (freplace, a
 * BPF_PROG_TYPE_EXT program) by one component program in run order.
 */
#include "uapi.h"
#include "bpf_helpers.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* MAX_DISPATCHER_ACTIONS of the protocol: the slots a dispatcher has. */
#define DISPATCHER_SLOTS 10

/* What a slot returns while no program replaces it: the highest bit of
 * chain_call_actions, which the loader always sets, so an empty slot
 * goes on to the next. */
#define SLOT_EMPTY 31

struct xdp_dispatcher_config {
	__u8 magic;              /* 236: 'X' + 'D' + 'P' */
	__u8 dispatcher_version; /* 2 */
	__u8 num_progs_enabled;  /* slots in use, from prog0 */
	__u8 is_xdp_frags;       /* loaded with BPF_F_XDP_HAS_FRAGS */
	__u32 chain_call_actions[DISPATCHER_SLOTS]; /* per slot: 1 << action goes on */
	__u32 run_prios[DISPATCHER_SLOTS];
	__u32 program_flags[DISPATCHER_SLOTS];
};

/* Set by the loader before the program is loaded; const puts it in the
 * frozen .rodata, volatile keeps the compiler from reading the zeros. */
volatile const struct xdp_dispatcher_config conf = {};

/* Each slot is a function of its own, never inlined, so that it has a BTF
 * function of its name for an extension to replace. Its volatile result
 * keeps the verifier from taking SLOT_EMPTY as the only value. */
#define SLOT(n)                                                  \
	__attribute__((noinline)) int prog##n(struct xdp_md *ctx) \
	{                                                        \
		volatile int ret = SLOT_EMPTY;                   \
		if (!ctx)                                        \
			return XDP_ABORTED;                      \
		return ret;                                      \
	}
SLOT(0)
SLOT(1)
SLOT(2)
SLOT(3)
SLOT(4)
SLOT(5)
SLOT(6)
SLOT(7)
SLOT(8)
SLOT(9)

/* Runs slot n when it is in use, and ends the chain with its action unless
 * the slot's chain_call_actions let that action go on. */
#define RUN(n)                                                   \
	if (conf.num_progs_enabled <= n)                         \
		return XDP_PASS;                                 \
	ret = prog##n(ctx);                                      \
	if (!((1U << (ret & 31)) & conf.chain_call_actions[n]))  \
		return ret;

SEC("xdp")
int xdp_dispatcher(struct xdp_md *ctx)
{
	int ret;

	RUN(0)
	RUN(1)
	RUN(2)
	RUN(3)
	RUN(4)
	RUN(5)
	RUN(6)
	RUN(7)
	RUN(8)
	RUN(9)
	return XDP_PASS;
}
