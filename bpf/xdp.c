// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

// rocetor's XDP program: the frames the switch handles go to the AF_XDP
// socket of their rx queue; the control plane the kernel keeps (ARP, IPv6
// neighbour discovery, LLDP, traffic addressed to the host itself) passes to
// the kernel. In endpoint mode (a host running software RNICs) it is the
// other way round for the host's own addresses: RoCEv2 to them and MAC
// control go to the socket, everything else to the kernel. See doc.go for
// the policy and how to rebuild this file.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Why each frame went where it went. The Go loader reads these names through
// the generated type (bpf2go -type counter), so the two cannot drift apart.
enum counter {
	COUNTER_REDIRECTED = 0, // handed to the AF_XDP socket of the rx queue
	COUNTER_NO_SOCKET,      // switch traffic, but no socket on this queue: passed
	COUNTER_PASS_ARP,       // ARP to the kernel
	COUNTER_PASS_ND,        // ICMPv6 router/neighbour discovery (types 133-137)
	COUNTER_PASS_LLDP,      // LLDP to the kernel
	COUNTER_PASS_LOCAL,     // IPv4/IPv6 to one of the host's own addresses
	COUNTER_PASS_LINK,      // link-scope multicast and broadcast (MLD, IGMP, VRRP, OSPF…)
	COUNTER_PASS_OTHER,     // endpoint mode: neither RoCEv2 to a local address nor MAC control
	COUNTER_MAX,
};

// Puts enum counter in the object's BTF, where bpf2go -type finds it to
// emit the Go constants (cilium/ebpf's idiom; it costs one tiny .bss map).
const enum counter *unused_counter __attribute__((unused));

// Endpoint mode, set by the loader before the program is loaded (a
// read-only global: the verifier sees the value and prunes the other
// mode's branches, so the switch pays nothing for it). 0 is the switch.
volatile const __u8 endpoint_mode = 0;

// The RoCEv2 UDP destination port (IBA annex A17.2.1).
#define ROCEV2_PORT 4791

// A local address in IPv6 form; IPv4 is stored v4-mapped (::ffff:a.b.c.d),
// which is what Go's netip.Addr.As16 produces, so one map serves both.
struct addr16 {
	__u32 w[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64); // the loader resizes this to Options.MaxQueues
	__type(key, __u32);      // rx queue index
	__type(value, __u32);    // AF_XDP socket fd (stored by the kernel as a socket)
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct addr16);
	__type(value, __u8);
} local_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32); // enum counter; BTF array keys must be plain ints
	__type(value, __u64);
} counters SEC(".maps");

// ICMPv6 types the kernel must see for neighbour discovery: router
// solicitation/advertisement, neighbour solicitation/advertisement, redirect.
#define ND_FIRST 133
#define ND_LAST 137

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);

	// Per-CPU slot: no other CPU writes it, so a plain add is exact.
	if (v)
		*v += 1;
}

static __always_inline int pass(__u32 c)
{
	count(c);
	return XDP_PASS;
}

static __always_inline int to_switch(struct xdp_md *ctx)
{
	// The low bits of flags are the action when the key has no socket: a
	// queue nobody serves (yet, or any more) falls back to the kernel
	// instead of dropping, so a stopped switch leaves a working host.
	long act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);

	count(act == XDP_REDIRECT ? COUNTER_REDIRECTED : COUNTER_NO_SOCKET);
	return act;
}

static __always_inline int is_local(struct addr16 *a)
{
	return bpf_map_lookup_elem(&local_addrs, a) != NULL;
}

// malformed handles a frame too short for the header it announces: the
// switch counts it as a malformed drop; an endpoint leaves it to the
// kernel, which drops it as it would without XDP.
static __always_inline int malformed(struct xdp_md *ctx)
{
	if (endpoint_mode)
		return pass(COUNTER_PASS_OTHER);
	return to_switch(ctx);
}

// not_local handles IP not addressed to the host: the switch routes it;
// an endpoint routes nothing and leaves it to the kernel.
static __always_inline int not_local(struct xdp_md *ctx)
{
	if (endpoint_mode)
		return pass(COUNTER_PASS_OTHER);
	return to_switch(ctx);
}

// local handles IP addressed to the host, whose L4 header starts at l4
// with protocol proto: the switch passes all of it; an endpoint takes
// RoCEv2 (UDP to port 4791) and passes the rest (ICMP, the TCP of the
// connection exchange, other UDP).
static __always_inline int local(struct xdp_md *ctx, void *l4, void *end, __u8 proto)
{
	struct udphdr *udp = l4;

	if (!endpoint_mode || proto != IPPROTO_UDP)
		return pass(COUNTER_PASS_LOCAL);
	if ((void *)(udp + 1) > end)
		return pass(COUNTER_PASS_OTHER);
	if (udp->dest == bpf_htons(ROCEV2_PORT))
		return to_switch(ctx);
	return pass(COUNTER_PASS_LOCAL);
}

SEC("xdp")
int rocetor_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct addr16 key = {};
	void *l3;
	__be16 proto;

	// Anything too short to classify: see malformed.
	if ((void *)(eth + 1) > end)
		return malformed(ctx);
	proto = eth->h_proto;
	l3 = eth + 1;

	// One 802.1Q tag, as rocev2.Classify parses it: control-plane
	// traffic on a tagged port still reaches the kernel's VLAN device.
	if (proto == bpf_htons(ETH_P_8021Q)) {
		struct vlan_tag *tag = l3;

		if ((void *)(tag + 1) > end)
			return malformed(ctx);
		proto = tag->proto;
		l3 = tag + 1;
	}

	switch (proto) {
	case bpf_htons(ETH_P_ARP):
		return pass(COUNTER_PASS_ARP);
	case bpf_htons(ETH_P_LLDP):
		return pass(COUNTER_PASS_LLDP);
	case bpf_htons(ETH_P_IP): {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > end)
			return malformed(ctx);
		// 224.0.0.0/24 and broadcast never leave the link: they are the
		// kernel's (IGMP, VRRP, OSPF), not traffic to route.
		if ((ip->daddr & bpf_htonl(0xffffff00)) == bpf_htonl(0xe0000000) ||
		    ip->daddr == bpf_htonl(0xffffffff))
			return pass(COUNTER_PASS_LINK);
		key.w[2] = bpf_htonl(0xffff);
		key.w[3] = ip->daddr;
		if (!is_local(&key))
			return not_local(ctx);
		// A non-first fragment has no UDP header; RoCEv2 never
		// fragments (DF), so the kernel reassembles whatever this is.
		// A header length below 5 words is the kernel's to drop.
		if ((ip->frag_off & bpf_htons(0x1fff)) || ip->ihl < 5)
			return pass(COUNTER_PASS_LOCAL);
		return local(ctx, (void *)ip + ip->ihl * 4, end, ip->protocol);
	}
	case bpf_htons(ETH_P_IPV6): {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end)
			return malformed(ctx);
		// ND carries no extension headers in practice (RFC 4861 relies
		// on hop limit 255, not on options), so only the first next
		// header is looked at.
		if (ip6->nexthdr == IPPROTO_ICMPV6) {
			__u8 *type = (void *)(ip6 + 1);

			if ((void *)(type + 1) <= end && *type >= ND_FIRST && *type <= ND_LAST)
				return pass(COUNTER_PASS_ND);
		}
		// ff01::/16 and ff02::/16 (interface- and link-local multicast,
		// MLD reports among them) never leave the link either.
		if (ip6->daddr.in6_u.u6_addr8[0] == 0xff &&
		    (ip6->daddr.in6_u.u6_addr8[1] & 0x0f) <= 2)
			return pass(COUNTER_PASS_LINK);
		__builtin_memcpy(&key, &ip6->daddr, sizeof(key));
		if (!is_local(&key))
			return not_local(ctx);
		// RoCEv2 over IPv6 carries no extension headers: UDP is the
		// first next header or the frame is not RoCEv2.
		return local(ctx, ip6 + 1, end, ip6->nexthdr);
	}
	}
	// PFC and PAUSE (0x8808) act on the port's egress queues, in the
	// switch and in an endpoint alike.
	if (proto == bpf_htons(ETH_P_PAUSE))
		return to_switch(ctx);
	// Everything else: the link shim (0x88b5) and anything unknown are
	// the switch's; an endpoint has no use for them.
	if (endpoint_mode)
		return pass(COUNTER_PASS_OTHER);
	return to_switch(ctx);
}

char __license[] SEC("license") = "Dual BSD/GPL";
