package netrt

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"rocetor/dataplane"
	"rocetor/tor/llr"
)

// TestChainWithLLR runs NetRT and link-local retransmission on the same
// uplink, as tord composes them (fwd → netrt → llr, llr's receiver
// wrapping the port), over a wire that loses every kind of frame at
// random in both directions: data, llr's copies, dummies, notices, ACKs
// and syncs, NetRT's requests, notices and pool retransmissions, the
// hosts' ACKs. llr recovers what it numbered; NetRT what crossed
// unnumbered (before the link's session, on other queues) or what llr
// skipped. The receiving RNIC must see every PSN once and in order, the
// sender never a NAK, and no frame may be left over.
//
// Both keep the frame itself where they can (Config.InPlace,
// llr.Config.TxFrames): with headroom llr's shim moves the source ToR's
// Ethernet header, which NetRT's resends restore; without, llr shims a
// copy. The receiver verifies every frame's ICRC.
func TestChainWithLLR(t *testing.T) {
	for _, mode := range []llr.Mode{llr.Blocking, llr.NonBlocking} {
		for _, c := range []struct {
			loss     float64
			headroom int
		}{{0.01, 0}, {0.05, 0}, {0.01, 256}, {0.05, 256}} {
			loss := c.loss
			t.Run(fmt.Sprintf("%v/%g/headroom=%d", mode, loss, c.headroom), func(t *testing.T) {
				var links [2]*llr.Stage
				for i := range links {
					var err error
					if links[i], err = llr.NewStage(llr.Config{Ports: 1 << (1 - i), Mode: mode, TxFrames: 256}); err != nil {
						t.Fatal(err)
					}
				}
				wrap := func(l *llr.Stage) func(int, dataplane.Port, *dataplane.Mem) dataplane.Port {
					return func(i int, p dataplane.Port, mem *dataplane.Mem) dataplane.Port {
						if !l.Protected(i) {
							return p
						}
						lp, err := l.Wrap(i, p, mem)
						if err != nil {
							t.Fatal(err)
						}
						return lp
					}
				}
				src, dst := chainToRs(t, chainConfig)
				a := newRigWrapped(t, 0, wrap(links[0]), src, links[0])
				b := newRigWrapped(t, 0, wrap(links[1]), dst, links[1])
				ch := chainOf(t, a, b, src, dst)
				for _, r := range []*rig{a, b} {
					for _, p := range r.ports {
						p.Headroom = c.headroom
					}
				}
				rng := rand.New(rand.NewPCG(1, uint64(loss*1e4)))
				lost := 0
				ch.a.ports[1].OnTransmit = func(f []byte) {
					if rng.Float64() < loss {
						lost++
						return
					}
					ch.b.inject(0, f)
				}
				ch.b.ports[0].OnTransmit = func(f []byte) {
					if rng.Float64() < loss {
						lost++
						return
					}
					ch.a.inject(1, f)
				}
				const n = 400
				ch.run(n, 20_000_000)
				ch.check(1, n, mode == llr.NonBlocking)
				la, lb := links[0].Stats().Ports[1], links[1].Stats().Ports[0]
				ss := src.Stats().Sum()
				t.Logf("%d frames lost on the wire; llr: %d protected, %d detected lost, %d retransmitted, %d skipped, %d sessions; NetRT: %d retransmitted, %d requests",
					lost, la.Protected, lb.LossesDetected, la.Retransmitted, lb.Skipped, la.Sessions, ss.Retrans, ss.Requests)
				// NetRT resends in nb mode, whose receiver passes what
				// llr has not yet recovered out of order.
				if lost == 0 || la.Protected == 0 || la.Retransmitted == 0 || mode == llr.NonBlocking && ss.Retrans == 0 || la.TxCopied != 0 {
					t.Fatalf("the run did not exercise llr's recovery from held frames and NetRT's resends (%d copied)", la.TxCopied)
				}
				ch.noLeak()
			})
		}
	}
}
