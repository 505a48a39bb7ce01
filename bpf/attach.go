package bpf

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Mode is where in the receive path the XDP program runs.
type Mode int

const (
	// ModeAuto tries native mode and falls back to generic mode when
	// the driver has no XDP support.
	ModeAuto Mode = iota
	// ModeNative runs the program in the driver, before an skb exists
	// (XDP_FLAGS_DRV_MODE). veth supports it.
	ModeNative
	// ModeGeneric runs it in the core stack after the skb is built
	// (XDP_FLAGS_SKB_MODE): any driver, slower.
	ModeGeneric

	// modeOffload is only reported, for a program another tool
	// offloaded to a NIC.
	modeOffload
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeNative:
		return "native"
	case ModeGeneric:
		return "generic"
	case modeOffload:
		return "offload"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

func (m Mode) flags() link.XDPAttachFlags {
	if m == ModeGeneric {
		return link.XDPGenericMode
	}
	return link.XDPDriverMode
}

// ipKeyword is how `ip link set dev X <keyword> off` names the mode, the
// command that removes a program of that mode.
func (m Mode) ipKeyword() string {
	switch m {
	case ModeGeneric:
		return "xdpgeneric"
	case modeOffload:
		return "xdpoffload"
	}
	return "xdp"
}

// Attach attaches the program to ifname through a bpf_link and reports the
// mode that took: with ModeAuto, native when the driver has XDP and
// generic otherwise. The interface name is resolved, and the program
// attached, in the calling thread's network namespace.
//
// The link lives as long as this process (or until Detach): a crashed
// switch leaves no program behind. A program someone attached through
// netlink does stay, and makes Attach fail with a *BusyError.
func (p *Program) Attach(ifname string, mode Mode) (Mode, error) {
	if p.link != nil {
		return 0, fmt.Errorf("attach xdp to %s: %w (to %s)", ifname, ErrAttached, p.ifname)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return 0, fmt.Errorf("attach xdp to %s: %w", ifname, err)
	}
	tries := []Mode{mode}
	switch mode {
	case ModeAuto:
		tries = []Mode{ModeNative, ModeGeneric}
	case ModeNative, ModeGeneric:
	default:
		return 0, fmt.Errorf("attach xdp to %s: mode %v: %w", ifname, mode, unix.EINVAL)
	}
	for _, m := range tries {
		var l link.Link
		l, err = link.AttachXDP(link.XDPOptions{
			Program:   p.objs.RocetorXdp,
			Interface: ifi.Index,
			Flags:     m.flags(),
		})
		switch {
		case err == nil:
			p.link, p.ifname, p.mode = l, ifname, m
			return m, nil
		// The kernel answers EBUSY when a program or link holds this
		// mode and EEXIST when one holds the other mode ("native and
		// generic XDP can't be active at the same time"); neither says
		// whose, so ask.
		case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EEXIST):
			return 0, busyError(ifname, ifi.Index, err)
		case errors.Is(err, unix.EOPNOTSUPP) && m == ModeNative:
			err = fmt.Errorf("%w: %w", ErrNoNative, err)
			if mode == ModeAuto {
				continue // to generic mode
			}
		}
		return 0, fmt.Errorf("attach xdp to %s in %v mode: %w", ifname, m, err)
	}
	return 0, fmt.Errorf("attach xdp to %s: %w", ifname, err)
}

// Detach removes the program from its interface. Detaching a program that
// is not attached is not an error.
func (p *Program) Detach() error {
	if p.link == nil {
		return nil
	}
	err := p.link.Close()
	ifname := p.ifname
	p.link, p.ifname, p.mode = nil, "", ModeAuto
	if err != nil {
		return fmt.Errorf("detach xdp from %s: %w", ifname, err)
	}
	return nil
}

// Attached reports the interface and mode the program is attached to, or
// "" when it is not attached.
func (p *Program) Attached() (ifname string, mode Mode) { return p.ifname, p.mode }

// BusyError says which XDP program already holds an interface and how to
// remove it. It matches ErrBusy under errors.Is.
type BusyError struct {
	Interface string
	// ProgramID and ProgramName identify the attached program; the name
	// is empty if the program could not be looked up. Zero ProgramID
	// means the kernel refused without netlink showing a program (it
	// went away meanwhile, or sits on an upper device).
	ProgramID   ebpf.ProgramID
	ProgramName string
	// Mode is the mode the program is attached in.
	Mode Mode
	// LinkID is the bpf_link holding the program, or zero when it was
	// attached through netlink (and so outlives the process that did it).
	LinkID link.ID
	// Err is the kernel's refusal.
	Err error
}

func (e *BusyError) Error() string {
	if e.ProgramID == 0 {
		return fmt.Sprintf("attach xdp to %s: %v: %v (check with: ip link show dev %s)",
			e.Interface, ErrBusy, e.Err, e.Interface)
	}
	prog := fmt.Sprintf("program %d", e.ProgramID)
	if e.ProgramName != "" {
		prog += fmt.Sprintf(" %q", e.ProgramName)
	}
	if e.LinkID != 0 {
		return fmt.Sprintf("attach xdp to %s: %v: %s in %v mode, held by bpf_link %d of a running process "+
			"(a link goes away with its process: stop that process; find it with: bpftool link show id %d)",
			e.Interface, ErrBusy, prog, e.Mode, e.LinkID, e.LinkID)
	}
	return fmt.Sprintf("attach xdp to %s: %v: %s in %v mode, attached through netlink "+
		"(left by a crashed run or another tool? remove it with: ip link set dev %s %s off)",
		e.Interface, ErrBusy, prog, e.Mode, e.Interface, e.Mode.ipKeyword())
}

// Unwrap makes errors.Is match ErrBusy and the kernel's errno.
func (e *BusyError) Unwrap() []error { return []error{ErrBusy, e.Err} }

// busyError builds the BusyError for ifindex from what netlink and the
// bpf_link list say. Failing to look things up only makes the message
// poorer, so those errors are dropped.
func busyError(ifname string, ifindex int, err error) error {
	e := &BusyError{Interface: ifname, Err: err}
	st, qerr := queryXDP(ifindex)
	if qerr != nil {
		return e
	}
	progs := st.programs()
	if len(progs) == 0 {
		return e
	}
	e.Mode, e.ProgramID = progs[0].mode, ebpf.ProgramID(progs[0].id)
	if prog, err := ebpf.NewProgramFromID(e.ProgramID); err == nil {
		if info, err := prog.Info(); err == nil {
			e.ProgramName = info.Name
		}
		prog.Close()
	}
	e.LinkID = xdpLinkFor(ifindex, e.ProgramID)
	return e
}

// xdpLinkFor finds the bpf_link that holds prog on ifindex, if any.
// Ifindexes repeat across network namespaces; matching the program too
// makes a wrong hit unlikely.
func xdpLinkFor(ifindex int, prog ebpf.ProgramID) link.ID {
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil || info.Type != link.XDPType || info.Program != prog {
			continue
		}
		if x := info.XDP(); x != nil && int(x.Ifindex) == ifindex {
			return it.ID
		}
	}
	return 0
}
