package llr

import (
	"testing"

	"rocetor/dataplane"
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

// With marking on the protected port's data queue, the originals leave
// shimmed and marked, and the far host gets them CE with a valid
// checksum and ICRC (the mark sits behind the shim: the queue entry
// knows where the IP header is). A lost frame's copy, taken as the frame
// was queued, carries the bits it arrived with: it leaves by the
// retransmit queue, which has no profile here.
func TestMarkedThroughShim(t *testing.T) {
	r := newRig(t, testCfg(Blocking))
	always := dataplane.ECNProfile{MinBytes: 0, MaxBytes: 1, PMax: 1}
	if err := r.a.w.SetMarking(dataplane.Marking{Profiles: [][]dataplane.ECNProfile{nil, {2: always}}}); err != nil {
		t.Fatal(err)
	}
	lost := map[uint32]bool{3: true, 4: true, 9: true}
	r.lose = loseSeq(3, 4, 9)
	got := map[uint32]uint8{}
	r.b.host.OnTransmit = func(f []byte) {
		var m rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
		if m.Reason != rocev2.ReasonNone || m.ShimOff != 0 {
			t.Errorf("host got reason %v, shim at %d", m.Reason, m.ShimOff)
			return
		}
		got[uint32(m.PSN)] = m.ECN
	}
	for n := uint32(0); n < 32; n++ {
		b := make([]byte, rigFrameSize)
		k, err := rocev2.Build(b, &rocev2.Spec{Src: rocev2.MAC{2, 0, 0, 0, 0, 0x0a}, Dst: rocev2.MAC{2, 0, 0, 0, 0, 0x0b},
			SrcIP: srcIP, DstIP: dstIP, ECN: uint8(1 + n%2), Opcode: rocev2.RCWriteMiddle, DestQP: 0x11, PSN: psn.New(n),
			Payload: make([]byte, 200)})
		if err != nil {
			t.Fatal(err)
		}
		r.a.host.Inject(b[:k])
	}
	r.run(1e6)
	marked := 0
	for n := uint32(0); n < 32; n++ {
		e, sent := got[n], uint8(1+n%2)
		switch {
		case lost[n] && e != sent:
			t.Errorf("PSN %d, lost and retransmitted, reached the host with ECN %d, sent with %d", n, e, sent)
		case e == 3:
			marked++
		case e != sent:
			t.Errorf("PSN %d reached the host with ECN %d, sent with %d", n, e, sent)
		}
	}
	if marked == 0 {
		t.Fatal("nothing marked behind the shim")
	}
	t.Logf("%d of 29 originals marked", marked)
}
