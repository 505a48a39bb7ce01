package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"rocetor/afxdp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "txgen:", err)
		os.Exit(1)
	}
}

func run() error {
	iface := flag.String("iface", "", "interface to send on (queue 0)")
	dstMAC := flag.String("dst-mac", "", "destination MAC address")
	srcIP := flag.String("src-ip", "198.18.0.1", "source IPv4 address")
	dstIP := flag.String("dst-ip", "198.18.1.2", "destination IPv4 address")
	size := flag.Int("size", 64, "frame size in bytes, without the FCS (60 to 1514)")
	roce := flag.Bool("roce", false, "UDP ports 4791 (RoCEv2) instead of 9 (discard)")
	queues := flag.Int("queues", 1, "tx queues to send on, 1 to 16")
	flag.Parse()
	if *iface == "" || *dstMAC == "" {
		return fmt.Errorf("--iface and --dst-mac are required")
	}
	if *queues < 1 || *queues > 16 {
		return fmt.Errorf("--queues %d, want 1 to 16", *queues)
	}
	if *size < 60 || *size > 1514 {
		return fmt.Errorf("--size %d, want 60 to 1514", *size)
	}
	dst, err := net.ParseMAC(*dstMAC)
	if err != nil {
		return fmt.Errorf("--dst-mac: %w", err)
	}
	sip, err := netip.ParseAddr(*srcIP)
	if err != nil || !sip.Is4() {
		return fmt.Errorf("--src-ip %q: not an IPv4 address", *srcIP)
	}
	dip, err := netip.ParseAddr(*dstIP)
	if err != nil || !dip.Is4() {
		return fmt.Errorf("--dst-ip %q: not an IPv4 address", *dstIP)
	}
	ifi, err := net.InterfaceByName(*iface)
	if err != nil {
		return err
	}
	port := uint16(9)
	if *roce {
		port = 4791
	}

	const frames = 4096
	umem, err := afxdp.NewUMEM(afxdp.UMEMOptions{FrameSize: 2048, NumFrames: frames})
	if err != nil {
		return err
	}
	defer umem.Close()
	// Each queue's socket owns frames/queues of the UMEM: ready holds
	// those the kernel does not, all of them at first, then each frame
	// its completion ring gives back, whole and unchanged.
	type txq struct {
		sock  *afxdp.Socket
		ready []afxdp.Desc
		k     int
	}
	per := frames / *queues
	qs := make([]txq, *queues)
	for q := range qs {
		// A tx budget of the whole ring: one sendto moves up to 2048
		// frames instead of the kernel's default 32
		// (afxdp.Options.TxBudget).
		sock, err := afxdp.Open(*iface, q, umem, afxdp.Options{Bind: afxdp.BindCopy, TxSize: 2048, CompletionSize: 2048, TxBudget: 2048})
		if err != nil {
			return err
		}
		defer sock.Close()
		qs[q] = txq{sock: sock, ready: make([]afxdp.Desc, per), k: per}
		for i := range qs[q].ready {
			d := afxdp.Desc{Addr: umem.FrameAddr(q*per + i), Len: uint32(*size)}
			build(umem.Frame(d.Addr, *size), ifi.HardwareAddr, dst, sip.As4(), dip.As4(), port)
			qs[q].ready[i] = d
		}
	}

	var stop atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; stop.Store(true) }()

	fmt.Printf("txgen: sending %d B frames on %s, %d queue(s)\n", *size, *iface, *queues)
	addrs := make([]uint64, 256)
	for !stop.Load() {
		for i := range qs {
			q := &qs[i]
			if n := q.sock.Transmit(q.ready[:q.k]); n > 0 {
				q.k = copy(q.ready, q.ready[n:q.k])
			}
			if err := q.sock.Wakeup(); err != nil {
				return err
			}
			n := q.sock.Complete(addrs)
			for _, a := range addrs[:n] {
				q.ready[q.k] = afxdp.Desc{Addr: a, Len: uint32(*size)}
				q.k++
			}
		}
	}
	return nil
}

// build writes an Ethernet/IPv4/UDP frame of len(b) bytes, the rest zero.
func build(b []byte, src, dst net.HardwareAddr, sip, dip [4]byte, port uint16) {
	clear(b)
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(len(b)-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], sip[:])
	copy(ip[16:20], dip[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], port)
	binary.BigEndian.PutUint16(udp[2:], port)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(b)-34))
	// UDP checksum 0: none, as testpmd's txonly and RoCEv2 send.
}
