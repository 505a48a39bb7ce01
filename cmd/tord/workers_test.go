package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rocetor/afxdp/xdptest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestTordWorkers runs tord with two workers on veths of two queues each
// (newTopoQueues), once per mechanism that keeps state, and sends RoCEv2
// writes of eight host pairs (sources 10.0.1.2 to .9, to h2) from h1:
// every frame must reach h2 once, whichever worker the veth's queue
// gave it to, and the workers must have handed frames to their owners
// (rocetor_worker_handed_total) — the egress owner of s2 is worker 1 —
// except for plain forwarding, which hands nothing. With llr on s2 the
// frames reach h2 shimmed, numbered 0, 1, 2, … in the one sequence
// space of the link, should a session start (h2 speaks no llr, so they
// cross unprotected: what the test shows for llr is that worker 0 owns
// the link and the frames pass). Run it alone: go test ./cmd/tord -run TestTordWorkers.
func TestTordWorkers(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	for _, c := range []struct{ name, yaml string }{
		{"plain", ""},
		{"netrt", "netrt: {fabric: [s2], prefixes: [10.0.2.0/24], pool_frames: 2048, buffer_frames: 1024}\n"},
		{"trim", "egress: {rate: 50M}\ntrim: {threshold: 16KiB, ports: [s2]}\n"},
		{"llr", "llr: {ports: [s2]}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopoQueues(t, 2)
			cfg := filepath.Join(t.TempDir(), "tord.yaml")
			// Rings of 512: h1's 400 frames come as one burst, and the
			// veth may give one queue most of them (8 sources over 2
			// queues) while its worker sleeps; with 256 the ring
			// overflowed (89 of 400 as xdp_rx_dropped in CI).
			yaml := "ports: [s1, s2]\nworkers: 2\nmetrics_addr: 127.0.0.1:9478\nadmin_addr: \"\"\nxdp: {ring_size: 512, frames: 8192}\n" + c.yaml
			if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			td := startTord(t, bin, tp.sw, "--config", cfg)
			if err := td.waitReady(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			if c.name == "llr" {
				// Pings would reach h2 shimmed, which its kernel
				// drops: give the switch h2's MAC instead.
				tp.sw.IP(t, "neigh", "replace", "10.0.2.2", "lladdr", tp.h2MAC.String(), "dev", "s2", "nud", "permanent")
				time.Sleep(200 * time.Millisecond) // the mirror's update
			} else {
				tp.warmUp(t, "10.0.2.2")
			}
			const n, qp = 400, 0x5151
			rx := xdptest.OpenPacket(t, tp.h2, "eth0")
			tx := xdptest.OpenPacket(t, tp.h1, "eth0")
			b := make([]byte, 2048)
			for i := range n {
				src := netip.AddrFrom4([4]byte{10, 0, 1, byte(2 + i%8)})
				s := rocev2.Spec{Src: tp.h1MAC, Dst: tp.s1MAC, SrcIP: src, DstIP: netip.MustParseAddr("10.0.2.2"),
					DCP: c.name == "trim", DSCP: 26, MSN: 1, Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: psn.New(uint32(i / 8)),
					Payload: payloadOf(i)[:512]}
				k, err := rocev2.Build(b, &s)
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.Send(b[:k]); err != nil {
					t.Fatalf("send frame %d: %v", i, err)
				}
			}
			cls := rocev2.Classifier{DCP: c.name == "trim", VerifyICRC: true}
			seen := map[[2]uint32]bool{}
			var seqs []uint16
			buf := make([]byte, 9000)
			for deadline := time.Now().Add(10 * time.Second); len(seen) < n; {
				k, err := rx.Recv(buf, time.Until(deadline), func(f []byte) bool {
					var m rocev2.Meta
					cls.Classify(f, &m)
					return m.Kind == rocev2.KindRoCE && m.Flow.QP == qp
				})
				if err != nil {
					if ms, merr := td.metrics(); merr == nil {
						for k, v := range ms {
							if v != 0 && (strings.Contains(k, "drop") || strings.Contains(k, "handed") || strings.Contains(k, "netrt")) {
								t.Logf("%s %g", k, v)
							}
						}
					}
					t.Fatalf("h2 received %d of %d frames: %v", len(seen), n, err)
				}
				var m rocev2.Meta
				cls.Classify(buf[:k], &m)
				key := [2]uint32{uint32(m.Flow.Src[15]), uint32(m.PSN)}
				if m.Reason != rocev2.ReasonNone || seen[key] {
					t.Fatalf("frame %v arrived malformed (%v) or twice", key, m.Reason)
				}
				seen[key] = true
				if m.ShimOff != 0 {
					seqs = append(seqs, m.LinkSeq.Seq())
				}
			}
			if c.name == "llr" {
				// h2 speaks no llr: the link has no session, and
				// frames cross unshimmed unless one started.
				for i := 1; i < len(seqs); i++ {
					if seqs[i] != seqs[i-1]+1 {
						t.Fatalf("link sequence %d after %d: one link, one sequence space", seqs[i], seqs[i-1])
					}
				}
			}
			var ms map[string]float64
			var err error
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if ms, err = td.metrics(); err != nil {
					t.Fatal(err)
				}
				if handed(ms) > 0 || c.name == "plain" {
					break
				}
			}
			if h := handed(ms); (h > 0) != (c.name != "plain") {
				t.Errorf("%v frames handed between workers; want some exactly with netrt, trim or llr", h)
			}
			t.Logf("%s", pick(ms, "rocetor_worker_handed_total", "rocetor_port_rx_packets_total", "rocetor_drops_total", "rocetor_trim_trimmed_packets_total", "rocetor_netrt_src_pooled_total", "rocetor_llr"))
		})
	}
}

func handed(ms map[string]float64) float64 {
	var n float64
	for k, v := range ms {
		if strings.HasPrefix(k, "rocetor_worker_handed_total") {
			n += v
		}
	}
	return n
}
