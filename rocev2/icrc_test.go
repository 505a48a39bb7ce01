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
	"unsafe"

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

// fxByteICRC is the ICRC by its definition, byte at a time and from
// nothing but the spec (IBA annex A17.3.3): eight 0xff bytes, then the
// packet from the IP header to the end of the pad with TOS, TTL and
// header checksum (IPv4), traffic class, flow label and hop limit
// (IPv6), the UDP checksum and BTH byte 4 set to ones, through a
// table-driven reflected CRC-32 that owes nothing to hash/crc32 or
// rocev2/crc. m supplies the offsets (from Classify without
// VerifyICRC).
func fxByteICRC(b []byte, m *rocev2.Meta) uint32 {
	var tab [256]uint32
	for i := range tab {
		c := uint32(i)
		for k := 0; k < 8; k++ {
			c = c>>1 ^ 0xedb88320&-(c&1)
		}
		tab[i] = c
	}
	l3, udp, bth := int(m.L3Off), int(m.L4Off), int(m.BTHOff)
	masked := map[int]byte{udp + 6: 0xff, udp + 7: 0xff, bth + 4: 0xff}
	if m.IPVersion == 4 {
		masked[l3+1], masked[l3+8], masked[l3+10], masked[l3+11] = 0xff, 0xff, 0xff, 0xff
	} else {
		masked[l3], masked[l3+1], masked[l3+2], masked[l3+3], masked[l3+7] = 0x0f, 0xff, 0xff, 0xff, 0xff
	}
	c := ^uint32(0)
	for i := 0; i < 8; i++ {
		c = tab[byte(c)^0xff] ^ c>>8
	}
	for i := l3; i < int(m.ICRCOff); i++ {
		c = tab[byte(c)^(b[i]|masked[i])] ^ c>>8
	}
	return ^c
}

// TestICRCVerifyRandom is a differential test of the ICRC check of
// Classify and ClassifyOwned against fxByteICRC: random frames of both
// families from 200 to 1500 bytes, with VLAN tags, shims, IPv4 options,
// Ethernet padding after the IP datagram and random values in every
// masked field, placed at random offsets and so that they end on both
// sides of a page boundary with nothing after them, with crc's AVX-512
// kernel (where the CPU has one) and with the generic path that other
// CPUs take. Every bit of the first 80 bytes from the IP header and 40
// random bits further on are flipped in turn (IPv4's header checksum
// fixed up each time, as a router would): the verdict must be what
// Classify without VerifyICRC and fxByteICRC together say, so a byte
// masked that the spec covers, or covered that it masks, fails.
func TestICRCVerifyRandom(t *testing.T) {
	defer crc.UseWide(crc.UseWide(false))
	r := rand.New(rand.NewSource(31))
	page := make([]byte, 3*4096)
	for _, wide := range []bool{true, false} {
		if crc.UseWide(wide); crc.Wide() != wide {
			t.Log("no AVX-512 kernel on this CPU: wide path not run")
			continue
		}
		for i := 0; i < 60; i++ {
			f := fxRandICRCFrame(t, r)
			var buf []byte
			if i%3 == 0 {
				// Ending within 64 bytes of a page boundary.
				base := 4096 - int(uintptr(unsafe.Pointer(&page[0]))&4095)
				end := base + 4096 + r.Intn(129) - 64
				buf = page[end-len(f) : end : end]
				copy(buf, f)
			} else {
				off := r.Intn(64)
				buf = make([]byte, off+len(f)+r.Intn(100))
				buf = buf[off : off+copy(buf[off:], f)]
			}
			fxCheckFlips(t, buf, r)
		}
	}
}

// fxRandICRCFrame builds a random RoCEv2 frame with a valid ICRC.
func fxRandICRCFrame(t *testing.T, r *rand.Rand) []byte {
	v6, vlan := r.Intn(2) == 0, r.Intn(3) == 0
	s := fxSpec(fxOps[r.Intn(len(fxOps))].op, v6, vlan, 0)
	s.Payload = make([]byte, 150+r.Intn(1300))
	r.Read(s.Payload)
	s.DSCP, s.ECN, s.TTL, s.FlowLabel = uint8(r.Intn(64))&^3, uint8(r.Intn(4)), uint8(r.Intn(256)), r.Uint32()
	s.FECN, s.BECN = r.Intn(2) == 0, r.Intn(2) == 0
	f := fxBuild(t, s)
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(f, &m)
	switch {
	case !v6 && r.Intn(4) == 0:
		f = fxWithOptions(t, f, &m, 4*(1+r.Intn(10)))
	case r.Intn(5) == 0:
		f = fxWrapShim(f, psn.LinkOf(uint16(r.Intn(1<<16)), false), rocev2.ShimOriginal)
	}
	rocev2.Classifier{}.Classify(f, &m)
	rocev2.UDP(f[m.L4Off:]).SetChecksum(uint16(r.Intn(1 << 16)))
	f[m.BTHOff+4] = byte(r.Intn(256))
	if r.Intn(4) == 0 {
		// Ethernet padding or a trailer after the IP datagram.
		pad := make([]byte, 1+r.Intn(40))
		r.Read(pad)
		f = append(f, pad...)
	}
	return f
}

// fxCheckFlips checks the ICRC verdict of frame f, which ends its
// buffer's capacity or not, intact and with single bits flipped.
func fxCheckFlips(t *testing.T, f []byte, r *rand.Rand) {
	t.Helper()
	var m rocev2.Meta
	verify := rocev2.Classifier{VerifyICRC: true}
	if verify.Classify(f, &m); m.Reason != rocev2.ReasonNone {
		t.Fatalf("intact frame, %d bytes: %v", len(f), m.Reason)
	}
	l3, end := int(m.L3Off), int(m.ICRCOff)+4
	at := make([]int, 0, 80*8+40)
	for i := 0; i < 80*8; i++ {
		at = append(at, l3*8+i)
	}
	for i := 0; i < 40; i++ {
		at = append(at, l3*8+80*8+r.Intn((end-l3-80)*8))
	}
	for _, bit := range at {
		f[bit/8] ^= 1 << (bit % 8)
		var ip rocev2.IPv4
		if m.IPVersion == 4 {
			ip = rocev2.IPv4(f[l3:])
			ip.SetChecksum()
		}
		var want, got, owned rocev2.Meta
		rocev2.Classifier{}.Classify(f, &want)
		if want.Reason == rocev2.ReasonNone && want.Kind == rocev2.KindRoCE &&
			fxByteICRC(f, &want) != want.ICRC(f) {
			want.Reason = rocev2.ReasonBadICRC
		}
		orig := append([]byte(nil), f...)
		verify.Classify(f, &got)
		verify.ClassifyOwned(f, &owned)
		if got.Reason != want.Reason || owned.Reason != want.Reason || !bytes.Equal(f, orig) {
			t.Fatalf("IPv%d, %d bytes, bit %d of byte %d from the IP header flipped: Classify %v, ClassifyOwned %v, want %v (frame unchanged: %v)",
				m.IPVersion, len(f), bit%8, bit/8-l3, got.Reason, owned.Reason, want.Reason, bytes.Equal(f, orig))
		}
		f[bit/8] ^= 1 << (bit % 8)
		if ip != nil {
			ip.SetChecksum()
		}
	}
}
