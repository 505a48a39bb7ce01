// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The benchmark's in-kernel XDP router, the shape of the kernel's
// samples/bpf/xdp_fwd_kern.c: an IPv4 route and neighbour lookup in the
// kernel's FIB (bpf_fib_lookup), a TTL decrement with an incremental
// checksum update, both MACs rewritten, and a redirect to the egress
// interface. It does the per-frame work tord's forwarding stage does,
// without leaving the kernel, so it is the ceiling for an XDP-based
// switch on this machine. Anything it cannot forward (no route, neighbour
// unresolved, local address, TTL expiring, not IPv4) passes to the kernel.
// bpf_fib_lookup needs net.ipv4.ip_forward=1 in the namespace.
//
// xdp-tools 1.3.1's xdp-bench would be the obvious peer, but its programs
// attach to the xdp_redirect_map tracepoints, which Linux 6.18 no longer
// has, so it fails to load there. scripts/bench-forward.sh builds this
// file with clang at run time.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef AF_INET
#define AF_INET 2
#endif

// The incremental update of RFC 1624 for a TTL decrement, as in the
// kernel's ip_decrease_ttl.
static __always_inline void decrease_ttl(struct iphdr *ip)
{
	__u32 check = (__u32)ip->check;

	check += (__u32)bpf_htons(0x0100);
	ip->check = (__sum16)(check + (check >= 0xFFFF));
	ip->ttl--;
}

SEC("xdp")
int bench_router(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->ttl <= 1)
		return XDP_PASS;
	fib.family = AF_INET;
	fib.tos = ip->tos;
	fib.l4_protocol = ip->protocol;
	fib.tot_len = bpf_ntohs(ip->tot_len);
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = ip->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_PASS;
	decrease_ttl(ip);
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect(fib.ifindex, 0);
}

char __license[] SEC("license") = "Dual BSD/GPL";
