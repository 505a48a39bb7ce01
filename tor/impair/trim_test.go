package impair

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// dcpFrame is a DCP WRITE middle of 1024 bytes (tag 10 in DSCP 26).
func dcpFrame(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: srcIP, DstIP: dstIP, DSCP: 26, DCP: true,
		Opcode: rocev2.RCWriteMiddle, DestQP: 7, PSN: psn.New(1), MSN: 3, Payload: make([]byte, 1024)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// dcpAckFrame is a DCP ACK (tag 01 in DSCP 25).
func dcpAckFrame(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: srcIP, DstIP: dstIP, DSCP: 25, DCP: true,
		Opcode: rocev2.RCAck, DestQP: 8, PSN: psn.New(1), MSN: 3, Syndrome: rocev2.ACKSyndrome(31)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// TestTrimRule streams DCP data, DCP ACKs and plain RoCE through an egress
// rule with trim: the DCP data packets that loss (or burst) picks arrive
// as valid 66-byte header-only packets, sent from the control queue and
// counted as Trimmed, none lost; the other kinds picked are dropped and
// counted as usual.
func TestTrimRule(t *testing.T) {
	for _, c := range []struct {
		name string
		rule Rule
	}{
		{"loss", Rule{Port: "p1", Direction: "egress", Loss: 0.3, Trim: true}},
		{"burst", Rule{Port: "p1", Direction: "egress", Burst: &Burst{Loss: 0.3, Length: 3}, Trim: true}},
		{"ingress", Rule{Port: "p0", Direction: "ingress", Loss: 0.3, Trim: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, single(c.rule), rigOpt{dcp: true})
			r.keep = true
			kinds := [][]byte{dcpFrame(t), dcpAckFrame(t), roce(t, rocev2.RCWriteMiddle, 24, 1024)}
			const n = 3000 // of each kind
			for i := 0; i < n; i++ {
				for _, f := range kinds {
					if !r.ports[0].Inject(f) {
						t.Fatal("inject refused")
					}
				}
				if i%16 == 15 {
					r.step(1000)
				}
			}
			r.drain()
			var full, ho, acks, plain int
			for _, f := range r.frame[1] {
				var m rocev2.Meta
				rocev2.Classifier{DCP: true, VerifyICRC: true}.Classify(f, &m)
				switch {
				case m.Reason != rocev2.ReasonNone:
					t.Fatalf("frame arrived malformed: %v", m.Reason)
				case m.Tag == rocev2.DCPHeaderOnly:
					if len(f) != 66 || m.PSN != 1 || m.Flow.QP != 7 {
						t.Fatalf("HO packet of %d bytes, PSN %d, QP %d", len(f), m.PSN, m.Flow.QP)
					}
					ho++
				case m.Tag == rocev2.DCPData:
					full++
				case m.Tag == rocev2.DCPAck:
					acks++
				default:
					plain++
				}
			}
			rs := r.dir(1, Egress)
			if c.rule.Direction == "ingress" {
				rs = r.dir(0, Ingress)
			}
			if full+ho != n || uint64(ho) != rs.Trimmed {
				t.Fatalf("DCP data: %d full + %d HO of %d sent; Trimmed %d", full, ho, n, rs.Trimmed)
			}
			lost := uint64(2*n - acks - plain)
			if rs.Caused(CauseLoss)+rs.Caused(CauseBurst) != lost || rs.Of(ClassData) != uint64(n-plain) || rs.Of(ClassControl) != uint64(n-acks) {
				t.Fatalf("ACK and plain: %d lost, counted %d+%d, %d of them data, %d control", lost,
					rs.Caused(CauseLoss), rs.Caused(CauseBurst), rs.Of(ClassData), rs.Of(ClassControl))
			}
			// 5 standard deviations of the burst case's loss rate
			// (geMargin), which covers the Bernoulli cases' too.
			p, q, _, _ := (&Burst{Loss: 0.3, Length: 3}).gilbert()
			within(t, "trimmed fraction", float64(ho)/n, 0.3, geMargin(p, q, 0, 1, n))
			r.noLeak()
		})
	}
}

// TestTrimNeedsDCPClassifier: without the classifier's DCP mode a tagged
// data packet cannot be trimmed, and a trim rule drops it like any other.
func TestTrimNeedsDCPClassifier(t *testing.T) {
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Loss: 1, Trim: true}), rigOpt{})
	r.keep = true
	f := dcpFrame(t)
	for i := 0; i < 10; i++ {
		r.ports[0].Inject(f)
	}
	r.drain()
	if rs := r.dir(1, Egress); len(r.frame[1]) != 0 || rs.Caused(CauseLoss) != 10 || rs.Trimmed != 0 {
		t.Fatalf("%d frames out, %+v; want all 10 lost", len(r.frame[1]), rs)
	}
	r.noLeak()
}

func TestTrimConfig(t *testing.T) {
	c := single(Rule{Port: "p1", Direction: "egress", Trim: true})
	if err := c.Validate([]string{"p0", "p1"}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "rules[0].trim:") {
		t.Fatalf("trim without loss: %v, want an error naming rules[0].trim", err)
	}
}

// TestTrimAllocs: trimming allocates nothing per packet.
func TestTrimAllocs(t *testing.T) {
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Loss: 0.5, Trim: true}), rigOpt{dcp: true})
	r.quiet()
	f := dcpFrame(t)
	round := func() {
		for i := 0; i < 32; i++ {
			r.ports[0].Inject(f)
		}
		r.step(1000)
	}
	for i := 0; i < 100; i++ {
		round()
	}
	if a := testing.AllocsPerRun(300, round); a != 0 {
		t.Errorf("%.1f allocations per batch", a)
	}
	if r.dir(1, Egress).Trimmed == 0 {
		t.Error("nothing trimmed")
	}
	r.noLeak()
}

// hoFrame is the header-only packet a trimming switch makes of dcpFrame.
func hoFrame(t testing.TB) []byte {
	t.Helper()
	f := dcpFrame(t)
	var m rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(f, &m)
	n, err := rocev2.Trim(f, &m)
	if err != nil {
		t.Fatal(err)
	}
	return f[:n]
}

// TestDataMatch: a rule with match data loses (or, with trim, trims)
// the data plane alone, as DCP's testbed loses packets (seed 002 §6.1):
// under a loss of 1, every DCP data packet becomes a header-only packet
// and every plain RoCE WRITE is destroyed, while header-only packets,
// DCP ACKs, RoCE ACKs, CNPs and LLDP all pass untouched. With match
// fabric (today's dcp-loss rule) the same rule destroys the control
// plane too, so the test fails if the filter stops filtering.
func TestDataMatch(t *testing.T) {
	for _, c := range []struct {
		match   string
		ho      int    // header-only packets that arrive: the trimmed one, and the spared one
		spared  int    // other frames that arrive
		control uint64 // control frames destroyed
	}{{"data", 2, 4, 0}, {"fabric", 1, 1, 4}} {
		t.Run(c.match, func(t *testing.T) {
			r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Match: c.match, Loss: 1, Trim: true}), rigOpt{dcp: true})
			r.keep = true
			control := [][]byte{hoFrame(t), dcpAckFrame(t), roce(t, rocev2.RCAck, 0, 0), roce(t, rocev2.CNP, 48, 16), lldp()}
			for _, f := range append(control, dcpFrame(t), roce(t, rocev2.RCWriteMiddle, 0, 1024)) {
				r.ports[0].Inject(f)
			}
			r.drain()
			var ho, other int
			for _, f := range r.frame[1] {
				var m rocev2.Meta
				rocev2.Classifier{DCP: true}.Classify(f, &m)
				if m.HeaderOnly() {
					ho++
				} else {
					other++
				}
			}
			rs := r.dir(1, Egress)
			if ho != c.ho || other != c.spared {
				t.Errorf("%d header-only and %d other frames arrived: want %d and %d", ho, other, c.ho, c.spared)
			}
			if rs.Trimmed != 1 || rs.Of(ClassData) != 1 || rs.Of(ClassControl) != c.control {
				t.Errorf("trimmed %d, destroyed %d data and %d control: want 1, 1 (the plain WRITE), %d",
					rs.Trimmed, rs.Of(ClassData), rs.Of(ClassControl), c.control)
			}
			r.noLeak()
		})
	}
}

// A frame another holder keeps (llr's Tx buffer) is trimmed in a copy:
// the header-only packet goes out, the held frame stays as it was sent,
// and each frame goes back to the memory with its last holder.
func TestTrimHeldFrame(t *testing.T) {
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Loss: 1, Trim: true}), rigOpt{dcp: true})
	r.keep = true
	f := dcpFrame(t)
	r.mem.EnableHolds()
	a, ok := r.mem.Alloc()
	if !ok || !r.mem.Hold(a) {
		t.Fatal("no frame to hold")
	}
	copy(r.mem.Room(a), f)
	if n := r.ip[1].Transmit([]dataplane.Packet{{Addr: a, Len: uint16(len(f))}}); n != 1 {
		t.Fatalf("transmit took %d", n)
	}
	r.drain()
	if len(r.frame[1]) != 1 || len(r.frame[1][0]) != 66 {
		t.Fatalf("sent %d frames (%v), want one header-only packet", len(r.frame[1]), r.frame[1])
	}
	if !bytes.Equal(r.mem.Bytes(a, len(f)), f) || r.mem.InUse() != 1 || r.mem.Shared() != 0 {
		t.Fatalf("the held frame changed, or %d frames in use (%d shared), want it alone", r.mem.InUse(), r.mem.Shared())
	}
	r.mem.Release(a)
	r.noLeak()
}
