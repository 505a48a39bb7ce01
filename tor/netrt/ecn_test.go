package netrt

import (
	"fmt"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// dataECN is data with the ECN bits ecn.
func dataECN(t testing.TB, qp, n uint32, ecn uint8) []byte {
	return build(t, &rocev2.Spec{Src: hostMAC, Dst: peerMAC, SrcIP: srcIP, DstIP: dstIP, ECN: ecn,
		Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: psn.New(n), Payload: make([]byte, 256)})
}

// ecnOf returns the PSN → ECN bits of the data frames among fs.
func ecnOf(t testing.TB, fs [][]byte) map[uint32]uint8 {
	t.Helper()
	out := map[uint32]uint8{}
	for _, f := range fs {
		if m := meta(t, f); m.Opcode != rocev2.NetRTOpcode {
			out[uint32(m.PSN)] = m.ECN
		}
	}
	return out
}

// The DCQCN receiver answers the CE mark a packet got upstream with a
// CNP: a packet DstToR holds in its reordering buffer, and releases
// when the hole fills, must reach the host with the ECN bits it arrived
// with (the buffer keeps the frame itself), and with a valid ICRC.
func TestDstReorderKeepsECN(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 50_000})
	bits := map[uint32]uint8{0: 2, 1: 3, 2: 2, 3: 3, 4: 1, 5: 0}
	for _, n := range []uint32{0, 1, 3, 4, 5} {
		r.inject(0, dataECN(t, 7, n, bits[n]))
	}
	r.settle()
	r.take(0) // the request
	r.inject(0, dataECN(t, 7, 2, bits[2]))
	r.settle()
	got := r.take(1)
	if !equal(psns(t, got), seq(0, 6)) {
		t.Fatalf("host got %v", psns(t, got))
	}
	for n, e := range ecnOf(t, got) {
		if e != bits[n] {
			t.Errorf("PSN %d reached the host with ECN %d, arrived with %d", n, e, bits[n])
		}
	}
	if p := d.Stats().Ports[1]; p.Held != 3 || p.Released != 3 {
		t.Fatalf("held %d, released %d: the reordering buffer was not exercised", p.Held, p.Released)
	}
	r.noLeak(d)
}

// SrcToR's duplicate pool keeps each packet as it arrived from the
// host: a retransmission carries the ECN bits of the original's arrival.
//
// Kept in place (Config.InPlace), the pooled frame is the original the
// fabric port's data queue marks CE as it leaves (a profile that marks
// every ECT frame): a resend still leaves with the arrival's bits.
func TestSrcRetransmitKeepsECN(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		t.Run(fmt.Sprintf("in-place=%v", inPlace), func(t *testing.T) { srcRetransmitKeepsECN(t, inPlace) })
	}
}

func srcRetransmitKeepsECN(t *testing.T, inPlace bool) {
	r, s := newSrc(t, Config{InPlace: inPlace})
	always := dataplane.ECNProfile{MinBytes: 0, MaxBytes: 1, PMax: 1}
	if err := r.w.SetMarking(dataplane.Marking{Profiles: [][]dataplane.ECNProfile{nil, {2: always}}}); err != nil {
		t.Fatal(err)
	}
	bits := map[uint32]uint8{0: 2, 1: 3, 2: 1, 3: 3, 4: 0}
	for n := uint32(0); n < 5; n++ {
		r.inject(0, dataECN(t, 7, n, bits[n]))
	}
	r.settle()
	got := ecnOf(t, r.take(1))
	for n, e := range got {
		if want := map[bool]uint8{true: 3, false: 0}[bits[n] != 0]; e != want {
			t.Errorf("PSN %d (ECN %d) left the fabric port with %d, want %d", n, bits[n], e, want)
		}
	}
	if len(got) != 5 {
		t.Fatalf("fabric got %v", got)
	}
	if st := s.Stats().Sum(); st.Pooled != 5 || r.mem.InUse() != 5 {
		t.Fatalf("pooled %d; %d frames in use, want the 5 pooled", st.Pooled, r.mem.InUse())
	}
	// ePSN 0, and 4 arrived (bit k is ePSN+1+k): 0–3 are retransmitted.
	r.inject(1, request(t, 7, 0, rocev2.Bitmap128{}.Set(3)))
	r.settle()
	got = ecnOf(t, r.take(1))
	if len(got) != 4 {
		t.Fatalf("retransmitted %v, want 0–3", got)
	}
	for n, e := range got {
		if e != bits[n] {
			t.Errorf("PSN %d retransmitted with ECN %d, arrived with %d", n, e, bits[n])
		}
	}
	r.noLeak(s)
}
