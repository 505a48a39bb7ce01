package rocev2_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/crc"
	"rocetor/rocev2/psn"
)

const fxPython = "/usr/bin/python3"

// TestICRCVectors checks the ICRC of every frame in
// testdata/icrc-vectors.txt, which scripts/icrc-vectors.py derived with
// scapy (IPv4) and its own implementation of the spec (both families).
func TestICRCVectors(t *testing.T) {
	f, err := os.Open("testdata/icrc-vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n, v4, v6, opts int
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("bad line %q", line)
		}
		want64, err := strconv.ParseUint(fs[2], 16, 32)
		if err != nil {
			t.Fatalf("%s: %v", fs[0], err)
		}
		want := uint32(want64)
		frame, err := hex.DecodeString(fs[3])
		if err != nil {
			t.Fatalf("%s: %v", fs[0], err)
		}
		var m rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(frame, &m)
		if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone {
			t.Errorf("%s: classified %v/%v", fs[0], m.Kind, m.Reason)
			continue
		}
		if got := m.ComputeICRC(frame); got != want {
			t.Errorf("%s: ComputeICRC = %08x, want %08x", fs[0], got, want)
		}
		if got := m.ICRC(frame); got != want {
			t.Errorf("%s: stored ICRC = %08x, want %08x", fs[0], got, want)
		}
		var owned rocev2.Meta
		if (rocev2.Classifier{VerifyICRC: true}).ClassifyOwned(frame, &owned); owned != m {
			t.Errorf("%s: ClassifyOwned %+v, Classify %+v", fs[0], owned, m)
		}
		if got := fxRefICRC(frame); got != want {
			t.Errorf("%s: the test's reference ICRC = %08x, want %08x", fs[0], got, want)
		}
		n++
		switch {
		case m.IPVersion == 6:
			v6++
		case fs[1] == "scapy+spec":
			v4++
		}
		if m.IPVersion == 4 && rocev2.IPv4(frame[m.L3Off:]).HeaderLen() > 20 {
			opts++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 50 || v4 < 25 || v6 < 20 || opts < 3 {
		t.Errorf("%d vectors (%d IPv4 checked by scapy, %d IPv6, %d with IPv4 options): the file is incomplete", n, v4, v6, opts)
	}
}

// fxWithOptions returns an IPv4 frame (described by m) with optLen bytes of
// NOP options inserted after the fixed header, lengths, checksum and ICRC
// fixed up.
func fxWithOptions(tb testing.TB, b []byte, m *rocev2.Meta, optLen int) []byte {
	l3 := int(m.L3Off)
	out := append([]byte(nil), b[:l3+20]...)
	out = append(out, bytes.Repeat([]byte{1}, optLen)...)
	out = append(out, b[l3+20:m.End]...)
	out[l3] = 0x40 | byte(5+optLen/4)
	h := rocev2.IPv4(out[l3:])
	h.SetTotalLen(h.TotalLen() + optLen)
	h.SetChecksum()
	if r := rocev2.RefreshICRC(out, rocev2.Classifier{}); r != rocev2.ReasonNone {
		tb.Fatalf("frame with %d bytes of options: %v", optLen, r)
	}
	return out
}

// fxRandFrames builds n random RoCEv2 frames of both families, some with
// IPv4 options and some wrapped in a link shim; scapyOK counts those
// scapy can check (IPv4 without a shim).
func fxRandFrames(tb testing.TB, r *rand.Rand, n int) (frames [][]byte, scapyOK int) {
	for i := 0; i < n; i++ {
		o := fxOps[r.Intn(len(fxOps))]
		v6 := i%3 == 2
		s := fxSpec(o.op, v6, r.Intn(2) == 0, r.Intn(300))
		s.DSCP, s.ECN, s.TTL = uint8(r.Intn(64))&^3, uint8(r.Intn(4)), uint8(r.Intn(256))
		s.FECN, s.BECN, s.PSN, s.DestQP = r.Intn(2) == 0, r.Intn(2) == 0, psn.PSN(r.Uint32()), r.Uint32()
		s.FlowLabel = r.Uint32()
		if v6 {
			s.SrcIP = netip.AddrFrom16([16]byte{0xfd, 15: byte(i)})
		} else {
			s.SrcIP = netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1})
		}
		r.Read(s.Payload)
		b := fxBuild(tb, s)
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(b, &m)
		if !v6 && i%5 == 1 {
			b = fxWithOptions(tb, b, &m, 4*(1+r.Intn(10)))
			rocev2.Classifier{}.Classify(b, &m)
		}
		// A router would rewrite the masked fields anywhere on the path.
		rocev2.UDP(b[m.L4Off:]).SetChecksum(uint16(r.Intn(1 << 16)))
		if i%7 == 3 {
			b = fxWrapShim(b, psn.LinkOf(uint16(i), false), rocev2.ShimOriginal)
		} else if !v6 {
			scapyOK++
		}
		frames = append(frames, b)
	}
	return frames, scapyOK
}

// TestICRCScapy has scapy and the script's spec implementation recompute
// the ICRC of fresh random frames built by rocev2.Build.
func TestICRCScapy(t *testing.T) {
	if err := exec.Command(fxPython, "-c", "import scapy.contrib.roce").Run(); err != nil {
		t.Skipf("skipping the scapy cross-check: %s -c 'import scapy.contrib.roce' failed (%v); install python3-scapy (CI does)", fxPython, err)
	}
	frames, scapyOK := fxRandFrames(t, rand.New(rand.NewSource(int64(os.Getpid()))), 300)
	var in bytes.Buffer
	for _, f := range frames {
		fmt.Fprintf(&in, "%x\n", f)
	}
	cmd := exec.Command(fxPython, "../scripts/icrc-vectors.py", "--recompute")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("icrc-vectors.py --recompute: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("script answered %d lines for %d frames", len(lines), len(frames))
	}
	checked := 0
	for i, f := range frames {
		var m rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
		if m.Reason != rocev2.ReasonNone {
			t.Fatalf("frame %d: %v", i, m.Reason)
		}
		got := fmt.Sprintf("%08x", m.ComputeICRC(f))
		fs := strings.Fields(lines[i])
		if len(fs) != 2 {
			t.Fatalf("line %d: %q", i, lines[i])
		}
		if fs[0] != got {
			t.Errorf("frame %d (%v, IPv%d): rocev2 %s, spec implementation %s\n%x", i, m.Opcode, m.IPVersion, got, fs[0], f)
		}
		if fs[1] != "-" {
			checked++
			if fs[1] != got {
				t.Errorf("frame %d (%v, IPv%d): rocev2 %s, scapy %s\n%x", i, m.Opcode, m.IPVersion, got, fs[1], f)
			}
		}
	}
	if checked != scapyOK {
		t.Errorf("scapy checked %d frames, want the %d IPv4 ones", checked, scapyOK)
	}
}

// TestICRCReference compares ComputeICRC with the test's own slow
// implementation over random frames, IPv4 options and shims included.
func TestICRCReference(t *testing.T) {
	frames, _ := fxRandFrames(t, rand.New(rand.NewSource(3)), 2000)
	for i, f := range frames {
		var m rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
		if m.Reason != rocev2.ReasonNone {
			t.Fatalf("frame %d: %v", i, m.Reason)
		}
		if got, want := m.ComputeICRC(f), fxRefICRC(f); got != want || m.ICRC(f) != want {
			t.Fatalf("frame %d: ComputeICRC %08x, stored %08x, reference %08x\n%x", i, got, m.ICRC(f), want, f)
		}
	}
}

// TestICRCMasking: rewrites of what a router may change (TTL, hop limit,
// TOS, traffic class, flow label, FECN/BECN, UDP checksum) leave the ICRC
// valid; rewrites of covered bytes break it, and RefreshICRC (or SetICRC)
// repairs it without touching anything else.
func TestICRCMasking(t *testing.T) {
	verify := rocev2.Classifier{VerifyICRC: true}
	masked := []struct {
		name string
		edit func(b []byte, m *rocev2.Meta)
	}{
		{"ttl", func(b []byte, m *rocev2.Meta) {
			if m.IPVersion == 4 {
				rocev2.IPv4(b[m.L3Off:]).SetTTL(1)
			} else {
				rocev2.IPv6(b[m.L3Off:]).SetHopLimit(1)
			}
		}},
		{"tos", func(b []byte, m *rocev2.Meta) {
			if m.IPVersion == 4 {
				rocev2.IPv4(b[m.L3Off:]).SetTOS(0xff)
			} else {
				rocev2.IPv6(b[m.L3Off:]).SetTrafficClass(0xff)
			}
		}},
		{"dscp and ecn (ce)", func(b []byte, m *rocev2.Meta) {
			if m.IPVersion == 4 {
				rocev2.IPv4(b[m.L3Off:]).SetDSCP(46)
				rocev2.IPv4(b[m.L3Off:]).SetECN(3)
			} else {
				rocev2.IPv6(b[m.L3Off:]).SetDSCP(46)
				rocev2.IPv6(b[m.L3Off:]).SetECN(3)
			}
		}},
		// What dataplane's ECN marking writes, alone: ECT → CE.
		{"ce mark", func(b []byte, m *rocev2.Meta) {
			if m.IPVersion == 4 {
				rocev2.IPv4(b[m.L3Off:]).SetECN(3)
			} else {
				rocev2.IPv6(b[m.L3Off:]).SetECN(3)
			}
		}},
		{"flow label", func(b []byte, m *rocev2.Meta) {
			if m.IPVersion == 6 {
				b[m.L3Off+1] ^= 0x0f
				b[m.L3Off+2] ^= 0xff
				b[m.L3Off+3] ^= 0x5a
			}
		}},
		{"fecn and becn", func(b []byte, m *rocev2.Meta) { rocev2.BTH(b[m.BTHOff:]).SetECN(true, true) }},
		{"bth resv6", func(b []byte, m *rocev2.Meta) { b[m.BTHOff+4] |= 0x3f }},
		{"udp checksum", func(b []byte, m *rocev2.Meta) { rocev2.UDP(b[m.L4Off:]).SetChecksum(0x1234) }},
		{"vlan tag", func(b []byte, m *rocev2.Meta) {
			if m.VLAN {
				b[14] ^= 0xe0
			}
		}},
	}
	covered := []struct {
		name string
		edit func(b []byte, m *rocev2.Meta)
	}{
		{"psn", func(b []byte, m *rocev2.Meta) { rocev2.BTH(b[m.BTHOff:]).SetPSN(m.PSN.Add(1)) }},
		{"dest qp", func(b []byte, m *rocev2.Meta) { rocev2.BTH(b[m.BTHOff:]).SetDestQP(m.Flow.QP ^ 1) }},
		{"ack req", func(b []byte, m *rocev2.Meta) { rocev2.BTH(b[m.BTHOff:]).SetAckReq(!m.AckReq) }},
		{"p_key", func(b []byte, m *rocev2.Meta) { rocev2.BTH(b[m.BTHOff:]).SetPKey(0x1234) }},
		{"udp source port", func(b []byte, m *rocev2.Meta) { rocev2.UDP(b[m.L4Off:]).SetSrcPort(m.SrcPort + 1) }},
		{"payload", func(b []byte, m *rocev2.Meta) { b[m.PayloadOff] ^= 0xff }},
		{"reth", func(b []byte, m *rocev2.Meta) { rocev2.RETH(b[m.ExtOff(rocev2.ExtRETH):]).Set(1, 2, 3) }},
		{"destination address", func(b []byte, m *rocev2.Meta) {
			if m.IPVersion == 4 {
				b[m.L3Off+19] ^= 1
				rocev2.IPv4(b[m.L3Off:]).SetChecksum()
			} else {
				b[m.L3Off+39] ^= 1
			}
		}},
	}
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []bool{false, true} {
			orig, m := fxFrame(t, rocev2.RCWriteFirst, v6, vlan, 64)
			for _, c := range masked {
				b := append([]byte(nil), orig...)
				c.edit(b, &m)
				var p rocev2.Meta
				verify.Classify(b, &p)
				if p.Reason != rocev2.ReasonNone {
					t.Errorf("v6=%v vlan=%v: %s rewrite: %v, want the ICRC still valid", v6, vlan, c.name, p.Reason)
				}
			}
			for _, c := range covered {
				b := append([]byte(nil), orig...)
				c.edit(b, &m)
				var p rocev2.Meta
				verify.Classify(b, &p)
				if p.Reason != rocev2.ReasonBadICRC {
					t.Errorf("v6=%v vlan=%v: %s rewrite: %v, want bad_icrc", v6, vlan, c.name, p.Reason)
					continue
				}
				edited := append([]byte(nil), b...)
				if r := rocev2.RefreshICRC(b, verify); r != rocev2.ReasonNone {
					t.Errorf("%s: RefreshICRC = %v", c.name, r)
				}
				verify.Classify(b, &p)
				if p.Reason != rocev2.ReasonNone {
					t.Errorf("v6=%v vlan=%v: %s rewrite, then RefreshICRC: %v", v6, vlan, c.name, p.Reason)
				}
				icrc := int(p.ICRCOff)
				if !bytes.Equal(b[:icrc], edited[:icrc]) || !bytes.Equal(b[icrc+4:], edited[icrc+4:]) {
					t.Errorf("%s: RefreshICRC changed more than the ICRC", c.name)
				}
				// SetICRC on a Meta from a classification does the same.
				copy(b, edited)
				var q rocev2.Meta
				rocev2.Classifier{}.Classify(b, &q)
				q.SetICRC(b)
				if verify.Classify(b, &p); p.Reason != rocev2.ReasonNone {
					t.Errorf("%s: SetICRC left %v", c.name, p.Reason)
				}
			}
		}
	}
	// RefreshICRC refuses malformed frames and leaves them alone.
	b, m := fxFrame(t, rocev2.RCSendOnly, false, false, 16)
	binary.BigEndian.PutUint16(b[m.L4Off+4:], 3)
	before := append([]byte(nil), b...)
	if r := rocev2.RefreshICRC(b, verify); r != rocev2.ReasonBadUDPLength || !bytes.Equal(b, before) {
		t.Errorf("RefreshICRC of a malformed frame: %v", r)
	}
}

// TestICRCOwned checks the in-place ICRC (ClassifyOwned, SetICRC) against
// the copying one and the test's reference for every payload length
// around the alignments the two paths care about (the range hash/crc32
// covers is cut to a multiple of 16 once it is 64 bytes or more), both
// families, with and without a VLAN tag, and that it leaves the frame
// as it found it.
func TestICRCOwned(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []bool{false, true} {
			for payload := 0; payload <= 200; payload++ {
				frame := fxBuild(t, fxSpec(rocev2.RCWriteMiddle, v6, vlan, payload))
				orig := append([]byte(nil), frame...)
				var m, owned rocev2.Meta
				c := rocev2.Classifier{VerifyICRC: true}
				c.Classify(frame, &m)
				if c.ClassifyOwned(frame, &owned); owned != m || m.Reason != rocev2.ReasonNone {
					t.Fatalf("v6 %v vlan %v payload %d: ClassifyOwned %+v, Classify %+v", v6, vlan, payload, owned, m)
				}
				if !bytes.Equal(frame, orig) {
					t.Fatalf("v6 %v vlan %v payload %d: ClassifyOwned changed the frame", v6, vlan, payload)
				}
				want := fxRefICRC(frame)
				if got := m.ComputeICRC(frame); got != want {
					t.Fatalf("v6 %v vlan %v payload %d: ComputeICRC %08x, want %08x", v6, vlan, payload, got, want)
				}
				binary.LittleEndian.PutUint32(frame[m.ICRCOff:], ^want)
				if c.ClassifyOwned(frame, &owned); owned.Reason != rocev2.ReasonBadICRC {
					t.Fatalf("v6 %v vlan %v payload %d: a wrong ICRC passed ClassifyOwned", v6, vlan, payload)
				}
				if m.SetICRC(frame); !bytes.Equal(frame, orig) {
					t.Fatalf("v6 %v vlan %v payload %d: SetICRC wrote more than the right ICRC", v6, vlan, payload)
				}
			}
		}
	}
}

// TestICRCVerifyOwned is a differential test of ClassifyOwned's ICRC check
// (icrcVerifyOwned: the CRC over the ICRC field too, zeros in the frame's
// spare capacity, a residue compared) against the test's reference: for
// every covered length across the 16-byte alignments and the lengths
// from which crc.Update's 512-bit kernel runs, both families, VLAN tags,
// shims and IPv4 options, with that kernel and with hash/crc32 (where the
// CPU has no VPCLMULQDQ, hash/crc32 twice), spare capacity from
// none to plenty and full of garbage, the verdict must be the
// reference's, the frame's bytes unchanged, and a flipped covered bit
// must fail while a flipped masked bit must not.
func TestICRCVerifyOwned(t *testing.T) {
	defer crc.UseWide(crc.UseWide(false))
	r := rand.New(rand.NewSource(30))
	c := rocev2.Classifier{VerifyICRC: true}
	for _, wide := range []bool{false, true} {
		crc.UseWide(wide)
		for payload := 0; payload <= 1100; payload += 1 + r.Intn(3) {
			v6, vlan := r.Intn(2) == 0, r.Intn(3) == 0
			s := fxSpec(rocev2.RCWriteMiddle, v6, vlan, payload)
			r.Read(s.Payload)
			frame := fxBuild(t, s)
			var m rocev2.Meta
			c.Classify(frame, &m)
			switch {
			case !v6 && r.Intn(4) == 0:
				frame = fxWithOptions(t, frame, &m, 4*(1+r.Intn(10)))
			case r.Intn(5) == 0:
				frame = fxWrapShim(frame, psn.LinkOf(uint16(payload), false), rocev2.ShimOriginal)
			}
			c.Classify(frame, &m)
			if m.Reason != rocev2.ReasonNone {
				t.Fatalf("payload %d: %v", payload, m.Reason)
			}
			icrc := binary.LittleEndian.Uint32(frame[m.ICRCOff:])
			if icrc != fxRefICRC(frame) {
				t.Fatalf("payload %d: built with ICRC %08x, reference %08x", payload, icrc, fxRefICRC(frame))
			}
			// Spare capacity: none, a few bytes, exactly what padding to
			// a multiple of 16 from the IP header needs, or plenty.
			need := int(m.L3Off) + (len(frame)-int(m.L3Off)+15)&^15 - len(frame)
			for _, spare := range []int{0, 1 + r.Intn(15), need - 1, need, need + 1 + r.Intn(2000)} {
				if spare < 0 {
					continue
				}
				fxCheckVerifyOwned(t, c, frame, &m, spare, r)
			}
		}
	}
}

// fxCheckVerifyOwned copies frame into a buffer with spare bytes of
// garbage after it and checks ClassifyOwned there: intact, with one
// covered bit flipped, and with one masked bit flipped.
func fxCheckVerifyOwned(t *testing.T, c rocev2.Classifier, frame []byte, m *rocev2.Meta, spare int, r *rand.Rand) {
	t.Helper()
	buf := make([]byte, len(frame)+spare)
	r.Read(buf)
	f := buf[:copy(buf, frame)]
	check := func(what string, want rocev2.Reason) {
		t.Helper()
		orig := append([]byte(nil), f...)
		var got rocev2.Meta
		if c.ClassifyOwned(f, &got); got.Reason != want {
			t.Fatalf("%s, IPv%d, %d bytes, %d spare: ClassifyOwned %v, want %v", what, m.IPVersion, len(frame), spare, got.Reason, want)
		}
		if !bytes.Equal(f, orig) {
			t.Fatalf("%s, %d bytes, %d spare: ClassifyOwned changed the frame", what, len(frame), spare)
		}
	}
	check("intact", rocev2.ReasonNone)
	// A covered bit outside the fields Classify checks on its own:
	// the BTH's PSN, the payload or the ICRC itself.
	at := int(m.BTHOff) + 9 + r.Intn(int(m.ICRCOff)+4-int(m.BTHOff)-9)
	bit := byte(1) << r.Intn(8)
	f[at] ^= bit
	check(fmt.Sprintf("bit %#x of byte %d flipped", bit, at), rocev2.ReasonBadICRC)
	f[at] ^= bit
	// The UDP checksum is masked: changing it must not matter.
	f[int(m.L4Off)+6] ^= bit
	check("UDP checksum changed", rocev2.ReasonNone)
}
