package llr

import (
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Frames cross the protected link shimmed, and a lost one is replaced by
// a copy from the Tx buffer, taken when the frame was queued: originals
// and copies alike reach the far host with the ECN bits they arrived
// with (a CE mark from upstream included, which the DCQCN receiver
// answers with a CNP), unshimmed and with a valid ICRC.
func TestCopiesKeepECN(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, testCfg(m))
			r.lose = loseSeq(3, 4, 9)
			got := map[uint32][]uint8{}
			r.b.host.OnTransmit = func(f []byte) {
				var m rocev2.Meta
				rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
				if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone || m.ShimOff != 0 {
					t.Errorf("host got kind %v, reason %v, shim at %d", m.Kind, m.Reason, m.ShimOff)
					return
				}
				got[uint32(m.PSN)] = append(got[uint32(m.PSN)], m.ECN)
			}
			for n := uint32(0); n < 16; n++ {
				b := make([]byte, rigFrameSize)
				k, err := rocev2.Build(b, &rocev2.Spec{Src: rocev2.MAC{2, 0, 0, 0, 0, 0x0a}, Dst: rocev2.MAC{2, 0, 0, 0, 0, 0x0b},
					SrcIP: srcIP, DstIP: dstIP, ECN: uint8(n % 4), Opcode: rocev2.RCWriteMiddle, DestQP: 0x11, PSN: psn.New(n),
					Payload: make([]byte, 200)})
				if err != nil {
					t.Fatal(err)
				}
				r.a.host.Inject(b[:k])
			}
			r.run(1e6)
			if a := r.stats(&r.a); a.Retransmitted != 3 {
				t.Fatalf("retransmitted %d, want the 3 lost", a.Retransmitted)
			}
			for n := uint32(0); n < 16; n++ {
				if e := got[n]; len(e) != 1 || e[0] != uint8(n%4) {
					t.Errorf("PSN %d reached the host with ECN %v, sent with %d", n, e, n%4)
				}
			}
		})
	}
}
