package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// DefaultMaxQueues sizes the XSKMAP when Options.MaxQueues is zero.
const DefaultMaxQueues = 64

// ProgramName is the kernel name of the XDP program, as bpftool and
// `ip link` show it.
const ProgramName = "rocetor_xdp"

// Options configures Load. The zero value is ready.
type Options struct {
	// MaxQueues is the number of rx queues a socket can be registered
	// for: queue indices 0 to MaxQueues-1. Zero means DefaultMaxQueues.
	MaxQueues int
	// LocalAddrs are the host's own addresses, whose traffic passes to
	// the kernel (in endpoint mode: whose RoCEv2 goes to the socket);
	// SetLocalAddrs replaces them later.
	LocalAddrs []netip.Addr
	// Endpoint loads the program in endpoint mode, for a host running
	// software RNICs (nic/host, roceperf) rather than a switch: RoCEv2
	// to a local address and MAC control go to the socket, everything
	// else passes to the kernel. See the package documentation.
	Endpoint bool
}

// Program is the XDP program and its maps, loaded into the kernel and
// attached to at most one interface.
//
// One Program serves one interface because the XSKMAP is keyed by rx queue
// index alone: two ports' queue 0 would collide in a shared map. A switch
// loads one Program per port, which also gives per-port counters.
//
// Methods are safe for concurrent use by the control plane except Attach,
// Detach and Close, which the owner calls from one goroutine. The XDP side
// reads the maps concurrently by design: Register and SetLocalAddrs take
// effect for the next frame.
type Program struct {
	objs      xdpObjects
	maxQueues int
	endpoint  bool

	link   link.Link
	ifname string
	mode   Mode
}

// Load loads the XDP program and its maps into the kernel. It lifts the
// process's RLIMIT_MEMLOCK on kernels before 5.11, which charge BPF maps to
// it; later kernels charge memory cgroups and it does nothing.
func Load(opts Options) (*Program, error) {
	n := opts.MaxQueues
	if n == 0 {
		n = DefaultMaxQueues
	}
	if n < 0 {
		return nil, fmt.Errorf("load xdp: max queues %d: %w", n, ErrQueue)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("load xdp: %w", err)
	}
	spec, err := loadXdp()
	if err != nil {
		return nil, fmt.Errorf("load xdp: %w", err)
	}
	spec.Maps[xdpMapXsks].MaxEntries = uint32(n)
	if opts.Endpoint {
		// A read-only global: set before loading, it is a constant to
		// the verifier, which drops the switch's branches.
		if err := spec.Variables[xdpVarEndpointMode].Set(uint8(1)); err != nil {
			return nil, fmt.Errorf("load xdp: set endpoint mode: %w", err)
		}
	}
	p := &Program{maxQueues: n, endpoint: opts.Endpoint}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		// The verifier's log is the only useful part of a rejection,
		// and a VerifierError prints it only under %+v.
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load xdp: %w\n%+v", err, ve)
		}
		return nil, fmt.Errorf("load xdp: %w", err)
	}
	if len(opts.LocalAddrs) > 0 {
		if err := p.SetLocalAddrs(opts.LocalAddrs); err != nil {
			p.objs.Close()
			return nil, err
		}
	}
	return p, nil
}

// Close detaches the program if attached and frees it and its maps.
func (p *Program) Close() error {
	err := p.Detach()
	if cerr := p.objs.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close xdp: %w", cerr)
	}
	return err
}

// ID is the kernel's ID of the loaded program, as bpftool shows it.
func (p *Program) ID() (ebpf.ProgramID, error) {
	info, err := p.objs.RocetorXdp.Info()
	if err != nil {
		return 0, fmt.Errorf("xdp program info: %w", err)
	}
	id, _ := info.ID()
	return id, nil
}

// Endpoint reports whether the program was loaded in endpoint mode.
func (p *Program) Endpoint() bool { return p.endpoint }

// MaxQueues is the size of the XSKMAP.
func (p *Program) MaxQueues() int { return p.maxQueues }

// Register sends the frames of rx queue queue that the switch handles to
// the AF_XDP socket fd (afxdp.Socket.FD). The map holds a reference to the
// socket, so closing fd alone does not unregister it: call Unregister.
func (p *Program) Register(queue, fd int) error {
	if queue < 0 || queue >= p.maxQueues {
		return fmt.Errorf("register xsk for queue %d: %w (map holds %d)", queue, ErrQueue, p.maxQueues)
	}
	if err := p.objs.Xsks.Update(uint32(queue), uint32(fd), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("register xsk fd %d for queue %d: %w", fd, queue, err)
	}
	return nil
}

// Unregister removes queue's socket; its frames then pass to the kernel.
// Unregistering an empty queue is not an error.
func (p *Program) Unregister(queue int) error {
	if queue < 0 || queue >= p.maxQueues {
		return fmt.Errorf("unregister xsk for queue %d: %w (map holds %d)", queue, ErrQueue, p.maxQueues)
	}
	err := p.objs.Xsks.Delete(uint32(queue))
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unregister xsk for queue %d: %w", queue, err)
	}
	return nil
}

// SetLocalAddrs replaces the host's own addresses, whose IPv4 and IPv6
// traffic passes to the kernel. New addresses are added before stale ones
// are removed, so an address in both sets never sees its traffic diverted.
func (p *Program) SetLocalAddrs(addrs []netip.Addr) error {
	want := make(map[xdpAddr16]struct{}, len(addrs))
	for _, a := range addrs {
		if !a.IsValid() {
			return fmt.Errorf("set local addrs: invalid address %v: %w", a, ErrAddr)
		}
		k := addrKey(a)
		want[k] = struct{}{}
		if err := p.objs.LocalAddrs.Update(k, uint8(1), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("set local addrs: add %v: %w", a, err)
		}
	}
	var stale []xdpAddr16
	var k xdpAddr16
	var v uint8
	it := p.objs.LocalAddrs.Iterate()
	for it.Next(&k, &v) {
		if _, ok := want[k]; !ok {
			stale = append(stale, k)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("set local addrs: list: %w", err)
	}
	for _, k := range stale {
		if err := p.objs.LocalAddrs.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("set local addrs: remove %v: %w", keyAddr(k), err)
		}
	}
	return nil
}

// addrKey is the map key of a: IPv6, or IPv4 mapped into IPv6, in network
// byte order. The zone is not part of it: link-local traffic to the host
// passes whatever its zone.
func addrKey(a netip.Addr) xdpAddr16 {
	b := a.As16()
	var k xdpAddr16
	for i := range k.W {
		// W holds the bytes as the C side sees them in memory, which is
		// network order; read them in the host's order to keep them.
		k.W[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	return k
}

func keyAddr(k xdpAddr16) netip.Addr {
	var b [16]byte
	for i, w := range k.W {
		binary.NativeEndian.PutUint32(b[4*i:], w)
	}
	return netip.AddrFrom16(b).Unmap()
}
