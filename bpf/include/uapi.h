/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Minimal UAPI subset (see README.md): values are kernel ABI. */
#pragma once

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_LRU_PERCPU_HASH = 10,
	BPF_MAP_TYPE_LPM_TRIE = 11,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

enum {
	BPF_F_NO_PREALLOC = (1U << 0),
	BPF_F_RDONLY_PROG = (1U << 7),
	BPF_F_MMAPABLE = (1U << 10),
};

enum xdp_action {
	XDP_ABORTED = 0,
	XDP_DROP,
	XDP_PASS,
	XDP_TX,
	XDP_REDIRECT,
};

struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

/* A tc program's context, up to the fields tc_dialogs.c reads; the
 * verifier checks offsets, so the prefix is all it needs. */
struct __sk_buff {
	__u32 len;
	__u32 pkt_type;
	__u32 mark;
	__u32 queue_mapping;
	__u32 protocol;
	__u32 vlan_present;
	__u32 vlan_tci;
	__u32 vlan_proto;
	__u32 priority;
	__u32 ingress_ifindex;
	__u32 ifindex;
	__u32 tc_index;
	__u32 cb[5];
	__u32 hash;
	__u32 tc_classid;
	__u32 data;
	__u32 data_end;
};

#define TC_ACT_UNSPEC (-1) /* tcx: TCX_NEXT */
#define TC_ACT_SHOT 2    /* tcx: TCX_DROP */

/* bpf_l4_csum_replace's flags: the size of the field in the low bits; a
 * UDP checksum of 0 (none, over IPv4) left as it is. */
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)

/* The helper prototypes name these; the program never dereferences them. */
struct bpf_dynptr;
struct bpf_fib_lookup;
struct bpf_map;
struct bpf_perf_event_data;
struct bpf_perf_event_value;
struct bpf_pidns_info;
struct bpf_redir_neigh;
struct bpf_sk_lookup;
struct bpf_sock;
struct bpf_sock_addr;
struct bpf_sock_ops;
struct bpf_sock_tuple;
struct bpf_spin_lock;
struct bpf_sysctl;
struct bpf_tcp_sock;
struct bpf_timer;
struct bpf_tunnel_key;
struct bpf_xfrm_state;
struct btf_ptr;
struct cgroup;
struct iphdr;
struct ipv6hdr;
struct linux_binprm;
struct pt_regs;
struct seq_file;
struct sk_msg_md;
struct sk_reuseport_md;
struct sockaddr;
struct task_struct;
struct tcphdr;
