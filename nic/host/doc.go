// Package host runs software RNIC endpoints (package nic) on a real or
// veth interface of a Linux host that has no RDMA NIC: the plumbing that
// roceperf and the testbed share.
//
// Open attaches rocetor's XDP program to the interface in endpoint mode
// (bpf.Options{Endpoint: true}): RoCEv2 to one of the interface's
// addresses and MAC control frames go to one AF_XDP socket on rx queue 0;
// ARP, neighbour discovery, ping and the TCP of a connection exchange
// pass to the kernel, which stays the control plane. The interface must
// have one rx queue (a veth has; `ethtool -L IFACE combined 1` makes a
// NIC so), since only queue 0 has a socket.
//
// A Host then runs Sessions one after the other: each is a fresh
// nic.Endpoint on a dataplane.Worker with the socket's port as its one
// port. QPs and memory regions are set up before the worker starts
// (nic's rule), so a server serving run after run makes a Session per
// run on the same socket and UMEM. The endpoint and the worker share one
// clock, so completion latencies are flow completion times. The worker
// polls adaptively: it spins, then sleeps in poll(2) on the socket for
// at most MaxSleep (50 µs by default), which bounds how long a work
// request posted to an idle endpoint waits for the worker.
//
// NextHop resolves the Ethernet address frames to a peer go to — the
// peer's own on a shared link, the router's otherwise — from the kernel's
// route and neighbour tables through netlink, asking the kernel to
// resolve it (an empty UDP datagram to the next hop's discard port) when
// it is not known yet.
//
// Nothing here is on the packet path: the worker, the port and the
// endpoint run as they do in tests, without allocating per packet.
//
// Example:
//
//	h, err := host.Open(host.Config{Dev: "eth0"})
//	defer h.Close()
//	mac, err := h.NextHop(ctx, peerIP)
//	s, err := h.NewSession(host.SessionConfig{Endpoint: nic.Config{IP: localIP, Transport: t}})
//	// RegisterMR, CreateQP, Connect on s.Endpoint(), then
//	s.Start()
//	defer s.Stop()
package host
