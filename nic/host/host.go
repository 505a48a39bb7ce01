package host

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"rocetor/afxdp"
	"rocetor/bpf"
	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Config configures Open. Only Dev is required.
type Config struct {
	// Dev is the interface to attach to.
	Dev string
	// XDP is where the XDP program runs (default bpf.ModeAuto: native,
	// falling back to generic); Bind how the socket binds (default
	// afxdp.BindAuto: zero-copy, falling back to copy).
	XDP  bpf.Mode
	Bind afxdp.BindMode
	// FrameSize is the UMEM frame size, 2048 or 4096 (default 4096, so
	// that a path MTU of 2048 fits a frame); Frames the number of frames
	// (default 8192); Ring the size of the rx and fill rings (default
	// 2048) and TxRing of the tx and completion rings (default 512: the
	// worker refills it every loop, and a deeper one is only delay in
	// front of a zero-copy NIC, which the transports' timers count).
	FrameSize, Frames, Ring, TxRing int
}

func (c *Config) setDefaults() {
	if c.FrameSize == 0 {
		c.FrameSize = 4096
	}
	if c.Frames == 0 {
		c.Frames = 8192
	}
	if c.Ring == 0 {
		c.Ring = 2048
	}
	if c.TxRing == 0 {
		c.TxRing = 512
	}
}

// ErrQueues: the interface has more than one rx queue; RoCEv2 arriving
// on the others would reach the kernel, not the endpoint.
var ErrQueues = errors.New("host: interface has more than one rx queue")

// Host is one interface with the XDP program attached in endpoint mode,
// one AF_XDP socket on rx queue 0, its UMEM and the port over them. It
// runs one Session at a time. Open, NewSession and Close belong to one
// goroutine; the accessors are safe from any.
type Host struct {
	cfg     Config
	ifindex int
	mac     rocev2.MAC
	addrs   []netip.Addr
	prog    *bpf.Program
	mode    bpf.Mode
	umem    *afxdp.UMEM
	sock    *afxdp.Socket
	mem     *dataplane.Mem
	port    *dataplane.XDPPort
	session *Session // the running one, if any
	closed  bool
}

// Open attaches to c.Dev, in the calling thread's network namespace. On
// error, everything made so far is released.
func Open(c Config) (*Host, error) {
	c.setDefaults()
	h := &Host{cfg: c}
	if err := h.open(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func (h *Host) open() error {
	c := h.cfg
	link, err := netlink.LinkByName(c.Dev)
	if err != nil {
		return fmt.Errorf("interface %s: %w", c.Dev, err)
	}
	a := link.Attrs()
	if n := rxQueues(c.Dev, a.Index, a.HardwareAddr); n > 1 {
		return fmt.Errorf("%s: %w (%d): RoCEv2 arriving on queues other than 0 would miss the endpoint; use one (ethtool -L %s rx 1, or combined 1)",
			c.Dev, ErrQueues, n, c.Dev)
	}
	if len(a.HardwareAddr) != len(h.mac) {
		return fmt.Errorf("interface %s has no Ethernet address", c.Dev)
	}
	h.ifindex = a.Index
	copy(h.mac[:], a.HardwareAddr)
	if h.addrs, err = devAddrs(c.Dev); err != nil {
		return err
	}
	if len(h.addrs) == 0 {
		return fmt.Errorf("interface %s has no IP address", c.Dev)
	}
	if h.prog, err = bpf.Load(bpf.Options{MaxQueues: 1, LocalAddrs: h.addrs, Endpoint: true}); err != nil {
		return fmt.Errorf("load XDP program for %s: %w", c.Dev, err)
	}
	if h.mode, err = h.prog.Attach(c.Dev, c.XDP); err != nil {
		return err // bpf's errors name the interface and any program in the way
	}
	if h.umem, err = afxdp.NewUMEM(afxdp.UMEMOptions{FrameSize: c.FrameSize, NumFrames: c.Frames}); err != nil {
		return fmt.Errorf("%s: %w", c.Dev, err)
	}
	if h.mem, err = dataplane.MemOfUMEM(h.umem); err != nil {
		return err
	}
	if h.sock, err = openSocket(c, h.umem); err != nil {
		return err
	}
	if h.port, err = dataplane.NewXDPPort(h.sock, h.mem, h.mac, c.Ring, h.mode == bpf.ModeNative); err != nil {
		h.sock.Close()
		h.sock = nil
		return err
	}
	if err = h.prog.Register(0, h.sock.FD()); err != nil {
		return fmt.Errorf("register socket of %s queue 0: %w", c.Dev, err)
	}
	return nil
}

// openSocket opens the socket on queue 0, asking for a large tx budget
// where the kernel has one (Linux 6.17), as tord does, so that copy mode
// sends a whole batch per syscall.
func openSocket(c Config, u *afxdp.UMEM) (*afxdp.Socket, error) {
	o := afxdp.Options{RxSize: c.Ring, TxSize: c.TxRing, FillSize: c.Ring, CompletionSize: c.TxRing, Bind: c.Bind, TxBudget: 256}
	sock, err := afxdp.Open(c.Dev, 0, u, o)
	if errors.Is(err, afxdp.ErrTxBudget) {
		o.TxBudget = 0
		sock, err = afxdp.Open(c.Dev, 0, u, o)
	}
	if err != nil {
		return nil, fmt.Errorf("open AF_XDP socket on %s queue 0: %w", c.Dev, err)
	}
	return sock, nil
}

// rxQueues counts the interface's rx queues in use (ethtool's current
// channels: a veth has one though it can have as many as CPUs) from
// sysfs, or returns 0 if sysfs is not this network namespace's — a
// thread that entered a namespace keeps its process's /sys — which
// ip netns exec, the way to run a tool in one, does remount.
func rxQueues(dev string, ifindex int, mac net.HardwareAddr) int {
	// Index and address together: an index alone often repeats in
	// another namespace (the first device added to one gets 2).
	idx, err1 := os.ReadFile("/sys/class/net/" + dev + "/ifindex")
	addr, err2 := os.ReadFile("/sys/class/net/" + dev + "/address")
	if err1 != nil || err2 != nil || strings.TrimSpace(string(idx)) != strconv.Itoa(ifindex) ||
		strings.TrimSpace(string(addr)) != mac.String() {
		return 0
	}
	m, _ := filepath.Glob("/sys/class/net/" + dev + "/queues/rx-*")
	return len(m)
}

// devAddrs lists the interface's addresses: the XDP program takes RoCEv2
// to them.
func devAddrs(dev string) ([]netip.Addr, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", dev, err)
	}
	as, err := ifi.Addrs()
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", dev, err)
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}

// Dev returns the interface name.
func (h *Host) Dev() string { return h.cfg.Dev }

// MAC returns the interface's Ethernet address.
func (h *Host) MAC() rocev2.MAC { return h.mac }

// Addrs returns the interface's IP addresses as of Open.
func (h *Host) Addrs() []netip.Addr { return append([]netip.Addr(nil), h.addrs...) }

// HasAddr reports whether a is one of the interface's addresses.
func (h *Host) HasAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, b := range h.addrs {
		if b == a.WithZone(b.Zone()) {
			return true
		}
	}
	return false
}

// Addr returns the interface's first address of a's family (IPv4 or
// IPv6, link-local ones last), for a peer at a.
func (h *Host) Addr(peer netip.Addr) (netip.Addr, error) {
	peer = peer.Unmap()
	var ll netip.Addr
	for _, b := range h.addrs {
		if b.Is4() != peer.Is4() {
			continue
		}
		if !b.IsLinkLocalUnicast() {
			return b, nil
		}
		if !ll.IsValid() {
			ll = b
		}
	}
	if ll.IsValid() {
		return ll, nil
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no address of the family of %v", h.cfg.Dev, peer)
}

// XDPMode returns the mode the XDP program was attached in.
func (h *Host) XDPMode() bpf.Mode { return h.mode }

// BindMode returns how the socket is bound (zero-copy or copy).
func (h *Host) BindMode() afxdp.BindMode { return h.sock.BindMode() }

// FrameSize returns the UMEM frame size, which bounds the MTU.
func (h *Host) FrameSize() int { return h.mem.FrameSize() }

// Counters returns the XDP program's counters.
func (h *Host) Counters() (bpf.Counters, error) { return h.prog.Counters() }

// Close stops the running session, detaches the XDP program and frees
// the socket and the UMEM. It is idempotent.
func (h *Host) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	if h.session != nil {
		h.session.Stop()
	}
	var err error
	if h.prog != nil {
		err = h.prog.Close() // detaches
	}
	if h.port != nil {
		if cerr := h.port.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close socket of %s: %w", h.cfg.Dev, cerr)
		}
	} else if h.sock != nil {
		h.sock.Close()
	}
	if h.umem != nil {
		if cerr := h.umem.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close UMEM of %s: %w", h.cfg.Dev, cerr)
		}
	}
	return err
}
