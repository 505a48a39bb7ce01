package main

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/trim"
)

// TestHOControlEveryPort builds tord's pipeline over in-memory ports
// (newMemSwitch) and sends a DCP data packet and a header-only packet out
// of up1 while up1's data queue is full: on a dcp-only switch, on a trimming switch whose trimming ports exclude up1,
// and on one where up1's trimming is switched off at run time. Each time
// the data packet is tail-dropped and the header-only packet takes the
// control queue and leaves first.
func TestHOControlEveryPort(t *testing.T) {
	for _, tc := range []struct {
		name string
		dcp  bool
		trim *trim.Config
		off  bool // switch trimming off at up1
	}{
		{name: "dcp-only", dcp: true},
		{name: "not trimming", trim: &trim.Config{Ports: []string{"up2"}}},
		{name: "switched off", trim: &trim.Config{}, off: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Ports = []string{"h1", "up1", "up2"}
			cfg.DCP, cfg.Trim, cfg.XDP.Frames = tc.dcp, tc.trim, 16384
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			sw := newMemSwitch(t, cfg, &fwd.TableConfig{
				Routes:     []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{{Port: 1, Gateway: netip.MustParseAddr("10.9.1.1")}}}},
				Neighbours: []fwd.Neighbour{{Port: 1, Addr: netip.MustParseAddr("10.9.1.1"), MAC: rocev2.MAC{2, 1}}},
			})
			if sw.Trim != nil {
				sw.Trim.SetPort(1, !tc.off)
			}
			w, mem, mps := sw.w, sw.mem, sw.ports
			var sent [][]byte
			mps[1].OnTransmit = func(f []byte) { sent = append(sent, append([]byte(nil), f...)) }
			mps[1].SetTxRoom(0)
			eg := w.Egress(1)
			data, ctrl := eg.QueueIndex(trim.DataQueue), eg.QueueIndex(trim.ControlQueue)
			for n := 0; n+1500 <= eg.Limit(data); n += 1500 {
				addr, _ := mem.Alloc()
				if !eg.Enqueue(data, addr, 1500) {
					t.Fatal("preload refused")
				}
			}
			ho := dcpFrame(t, "10.0.2.2", 26, 7, 1024)
			var m rocev2.Meta
			rocev2.Classifier{DCP: true}.Classify(ho, &m)
			n, err := rocev2.Trim(ho, &m)
			if err != nil {
				t.Fatal(err)
			}
			mps[0].Inject(dcpFrame(t, "10.0.2.2", 26, 8, 1024))
			mps[0].Inject(ho[:n])
			w.Step(1000)
			if _, k := eg.Depth(ctrl); k != 1 {
				t.Fatalf("control queue holds %d packets, want the header-only packet", k)
			}
			mps[1].SetTxRoom(dataplane.BatchSize)
			w.Step(2e6)
			rocev2.Classifier{DCP: true}.Classify(sent[0], &m)
			if !m.HeaderOnly() {
				t.Fatalf("first frame out of up1 has tag %v, want the header-only packet", m.Tag)
			}
			if d := w.Snapshot().Drops[dataplane.ReasonQueueFull]; d != 1 {
				t.Fatalf("%d queue_full drops, want 1: the data packet", d)
			}
		})
	}
}
