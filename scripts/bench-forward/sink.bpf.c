// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The benchmark's sink: drops every IPv4 UDP frame and passes everything
// else (ARP, IPv6 neighbour discovery) to the kernel. It keeps no map: veth
// counts what an XDP program drops per rx queue (ethtool -S:
// rx_queue_N_xdp_drops), and that counter is the sink's packet count.
// scripts/bench-forward.sh builds it with clang at run time.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("xdp")
int bench_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	return XDP_DROP;
}

char __license[] SEC("license") = "Dual BSD/GPL";
