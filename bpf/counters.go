package bpf

import "fmt"

// Counters say where the XDP program sent each frame, summed over CPUs,
// since Load. Every frame is counted exactly once.
type Counters struct {
	// Redirected: handed to the AF_XDP socket of the frame's rx queue.
	// A redirected frame can still be dropped by the socket (full rx
	// ring, empty fill ring): afxdp.Socket.Stats counts those.
	Redirected uint64
	// NoSocket: switch traffic on a queue with no registered socket,
	// passed to the kernel instead.
	NoSocket uint64
	// PassARP, PassND, PassLLDP: control-plane frames passed to the
	// kernel (ARP; ICMPv6 types 133-137; LLDP).
	PassARP, PassND, PassLLDP uint64
	// PassLocal: IPv4 and IPv6 to one of the local addresses, passed.
	PassLocal uint64
	// PassLink: link-scope multicast and broadcast (224.0.0.0/24,
	// 255.255.255.255, ff01::/16, ff02::/16), passed: MLD, IGMP and
	// routing protocols belong to the kernel and are never routed.
	PassLink uint64
	// PassOther: endpoint mode only — everything that is neither RoCEv2
	// to a local address nor MAC control and has no counter above (IP
	// to other addresses, other EtherTypes, frames too short to
	// classify), passed to the kernel, which treats it as it would
	// without XDP.
	PassOther uint64
}

// Passed is every frame the program passed to the kernel.
func (c Counters) Passed() uint64 {
	return c.NoSocket + c.PassARP + c.PassND + c.PassLLDP + c.PassLocal + c.PassLink + c.PassOther
}

// Counters reads and sums the per-CPU counters. It makes one syscall per
// counter; call it at scrape time, not per packet.
func (p *Program) Counters() (Counters, error) {
	var c Counters
	for _, f := range []struct {
		key xdpCounter
		dst *uint64
	}{
		{xdpCounterCOUNTER_REDIRECTED, &c.Redirected},
		{xdpCounterCOUNTER_NO_SOCKET, &c.NoSocket},
		{xdpCounterCOUNTER_PASS_ARP, &c.PassARP},
		{xdpCounterCOUNTER_PASS_ND, &c.PassND},
		{xdpCounterCOUNTER_PASS_LLDP, &c.PassLLDP},
		{xdpCounterCOUNTER_PASS_LOCAL, &c.PassLocal},
		{xdpCounterCOUNTER_PASS_LINK, &c.PassLink},
		{xdpCounterCOUNTER_PASS_OTHER, &c.PassOther},
	} {
		var perCPU []uint64
		if err := p.objs.Counters.Lookup(uint32(f.key), &perCPU); err != nil {
			return Counters{}, fmt.Errorf("read xdp counter %d: %w", f.key, err)
		}
		for _, v := range perCPU {
			*f.dst += v
		}
	}
	return c, nil
}
