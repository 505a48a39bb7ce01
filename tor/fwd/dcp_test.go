package fwd

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// dcpFrame builds a DCP WRITE middle packet to dst (tag 10 in DSCP
// 26), or, trimmed, the header-only packet a trimming switch upstream
// made of it (tag 11).
func dcpFrame(t testing.TB, dst string, ho bool) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{
		Src: rocev2.MAC{2, 0xaa, 0, 0, 0, 1}, Dst: portMAC(0),
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr(dst), DSCP: 26,
		DCP: true, Opcode: rocev2.RCWriteMiddle, DestQP: 7, PSN: psn.New(5), MSN: 3,
		VA: 0x1000, RKey: 1, DMALen: 1 << 20, Payload: make([]byte, 1024),
	})
	if err != nil {
		t.Fatal(err)
	}
	b = b[:n]
	if ho {
		var m rocev2.Meta
		rocev2.Classifier{DCP: true}.Classify(b, &m)
		if n, err = rocev2.Trim(b, &m); err != nil {
			t.Fatal(err)
		}
		b = b[:n]
	}
	return b
}

// TestHeaderOnlyControl is the control plane of a DCP switch on a port
// that does not trim (a dcp-only switch's, or a trimming switch's other
// ports): with the data queue full, a DCP data packet is tail-dropped,
// and a header-only packet — whatever queue its DSCP maps to — takes
// the control queue and leaves first.
func TestHeaderOnlyControl(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DCP = true
	cfg.DSCPQueue = map[uint8]int{27: 3} // an override the HO packet must not follow
	r := newRig(t, 4, cfg, baseTable())
	eg := r.w.Egress(2)
	ctrl, data := eg.QueueIndex("control"), eg.QueueIndex("data")
	r.ports[2].SetTxRoom(0)
	for n := 0; n+1500 <= eg.Limit(data); n += 1500 {
		addr, ok := r.mem.Alloc()
		if !ok || !eg.Enqueue(data, addr, 1500) {
			t.Fatal("preload refused")
		}
	}
	full := r.drops(dataplane.ReasonQueueFull)
	r.send(dcpFrame(t, "10.0.2.5", false), dcpFrame(t, "10.0.2.5", true))
	if got := r.drops(dataplane.ReasonQueueFull) - full; got != 1 {
		t.Fatalf("%d queue_full drops, want 1 (the data packet)", got)
	}
	if b, n := eg.Depth(ctrl); n != 1 || b != trimmedLen {
		t.Fatalf("control queue holds %d packets, %d bytes; want the header-only packet", n, b)
	}
	r.ports[2].SetTxRoom(dataplane.BatchSize)
	r.send()
	if len(r.sent[2]) == 0 {
		t.Fatal("nothing sent")
	}
	var m rocev2.Meta
	rocev2.Classifier{DCP: true, VerifyICRC: true}.Classify(r.sent[2][0], &m)
	if !m.HeaderOnly() || m.Reason != rocev2.ReasonNone {
		t.Fatalf("first frame out: tag %v, reason %v; want the header-only packet, ahead of the data queue", m.Tag, m.Reason)
	}
}

// trimmedLen is an untagged IPv4 header-only packet's length.
const trimmedLen = 66
