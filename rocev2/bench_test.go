package rocev2_test

import (
	"fmt"
	"hash/crc32"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/crc"
)

// fxBenchFrame is a 1 KB RoCEv2 frame: IPv4, RC RDMA WRITE MIDDLE with
// 970 bytes of payload (14+20+8+12+970+4 = 1028 bytes).
func fxBenchFrame(tb testing.TB) []byte {
	return fxBuild(tb, fxSpec(rocev2.RCWriteMiddle, false, false, 970))
}

// fxReportMpps adds packets per second (in millions) to a benchmark whose
// every iteration handles one packet.
func fxReportMpps(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s/1e6, "Mpps")
	}
}

// BenchmarkClassify: go test -run '^$' -bench Classify -benchmem ./rocev2/
func BenchmarkClassify(b *testing.B) {
	frame := fxBenchFrame(b)
	s := fxSpec(rocev2.RCWriteMiddle, false, false, 946)
	s.DCP, s.DSCP = true, rocev2.WithTag(8, rocev2.DCPData)
	dcp := fxBuild(b, s) // also 1028 bytes: DCP header and RETH take 24
	for _, c := range []struct {
		name  string
		c     rocev2.Classifier
		frame []byte
	}{
		{"1KB", rocev2.Classifier{}, frame},
		{"1KB-dcp-data", rocev2.Classifier{DCP: true}, dcp},
		{"1KB-verify-icrc", rocev2.Classifier{VerifyICRC: true}, frame},
	} {
		b.Run(c.name, func(b *testing.B) {
			var m rocev2.Meta
			for b.Loop() {
				c.c.Classify(c.frame, &m)
			}
			if m.Reason != rocev2.ReasonNone {
				b.Fatal(m.Reason)
			}
			fxReportMpps(b)
		})
	}
	b.Run("1KB-verify-icrc-owned", func(b *testing.B) {
		var m rocev2.Meta
		c := rocev2.Classifier{VerifyICRC: true}
		for b.Loop() {
			c.ClassifyOwned(frame, &m)
		}
		if m.Reason != rocev2.ReasonNone {
			b.Fatal(m.Reason)
		}
		fxReportMpps(b)
	})
}

// fxTableCRC is the plain alternative to hash/crc32's Update: a 256-entry
// table and one byte per step (what a straightforward port of Linux
// rxe's crc32_le would do).
func fxTableCRC(crc uint32, tab *crc32.Table, p []byte) uint32 {
	crc = ^crc
	for _, v := range p {
		crc = tab[byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

var fxTab = crc32.MakeTable(crc32.IEEE)

func TestTableCRC(t *testing.T) {
	p := fxPayload(4099)
	if fxTableCRC(0, fxTab, p) != crc32.ChecksumIEEE(p) {
		t.Fatal("the byte-wise table CRC of the benchmark is wrong")
	}
}

// BenchmarkICRC measures the ICRC over 1 KB and 4 KB frames, as icrc.go
// computes it (hash/crc32, whose amd64 Update uses the carry-less multiply
// kernel for long inputs) and with a byte-wise table loop, to document why
// icrc.go uses hash/crc32: go test -run '^$' -bench ICRC ./rocev2/
func BenchmarkICRC(b *testing.B) {
	for _, size := range []struct {
		name    string
		payload int
	}{{"1KB", 970}, {"4KB", 4042}} {
		frame := fxBuild(b, fxSpec(rocev2.RCWriteMiddle, false, false, size.payload))
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(frame, &m)
		covered := frame[m.L3Off:m.ICRCOff]
		b.Run(size.name+"/hash-crc32", func(b *testing.B) {
			b.SetBytes(int64(len(covered)))
			var sum uint32
			for b.Loop() {
				sum = m.ComputeICRC(frame)
			}
			if sum != m.ICRC(frame) {
				b.Fatal("wrong ICRC")
			}
			fxReportMpps(b)
		})
		b.Run(size.name+"/in-place", func(b *testing.B) {
			// SetICRC computes it in place, as ClassifyOwned does.
			b.SetBytes(int64(len(covered)))
			want := m.ICRC(frame)
			for b.Loop() {
				m.SetICRC(frame)
			}
			if m.ICRC(frame) != want {
				b.Fatal("wrong ICRC")
			}
			fxReportMpps(b)
		})
		b.Run(size.name+"/table-bytewise", func(b *testing.B) {
			// The masked headers come first, as in icrc.go; the cost is
			// the byte loop over the rest.
			b.SetBytes(int64(len(covered)))
			var sum uint32
			hdr := int(m.BTHOff) + rocev2.BTHLen - int(m.L3Off)
			for b.Loop() {
				var h [80]byte
				n := copy(h[:], covered[:hdr])
				h[1], h[8], h[10], h[11] = 0xff, 0xff, 0xff, 0xff
				h[26], h[27], h[32] = 0xff, 0xff, 0xff
				crc := fxTableCRC(0, fxTab, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
				crc = fxTableCRC(crc, fxTab, h[:n])
				sum = fxTableCRC(crc, fxTab, covered[hdr:])
			}
			if sum != m.ICRC(frame) {
				b.Fatal("wrong ICRC")
			}
			fxReportMpps(b)
		})
	}
}

// BenchmarkBuild builds the 1 KB frame into a reused buffer.
func BenchmarkBuild(b *testing.B) {
	s := fxSpec(rocev2.RCWriteMiddle, false, false, 970)
	buf := make([]byte, 2048)
	for b.Loop() {
		if _, err := rocev2.Build(buf, s); err != nil {
			b.Fatal(err)
		}
	}
	fxReportMpps(b)
}

// BenchmarkTrim trims a 1 KB DCP data packet to a header-only one. Each
// iteration first restores the 128 header bytes Trim rewrites and the
// Meta (a copy of about 70 bytes); that is included in the time.
func BenchmarkTrim(b *testing.B) {
	s := fxSpec(rocev2.RCWriteMiddle, false, false, 946)
	s.DCP, s.DSCP = true, rocev2.WithTag(8, rocev2.DCPData)
	orig := fxBuild(b, s)
	var m0 rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(orig, &m0)
	frame := append([]byte(nil), orig...)
	var m rocev2.Meta
	for b.Loop() {
		copy(frame[:128], orig[:128])
		m = m0
		if _, err := rocev2.Trim(frame, &m); err != nil {
			b.Fatal(err)
		}
	}
	fxReportMpps(b)
}

// TestZeroAllocs: the packet path allocates nothing.
func TestZeroAllocs(t *testing.T) {
	frame := fxBenchFrame(t)
	s := fxSpec(rocev2.RCWriteOnlyImm, true, true, 500)
	buf := make([]byte, 2048)
	dcpSpec := fxSpec(rocev2.RCWriteMiddle, false, false, 946)
	dcpSpec.DCP, dcpSpec.DSCP = true, rocev2.WithTag(8, rocev2.DCPData)
	dcp := fxBuild(t, dcpSpec)
	var m rocev2.Meta
	pfc := make([]byte, 64)
	cases := []struct {
		name string
		f    func()
	}{
		{"Classify", func() { rocev2.Classifier{}.Classify(frame, &m) }},
		{"Classify/VerifyICRC", func() { rocev2.Classifier{VerifyICRC: true}.Classify(frame, &m) }},
		{"ClassifyOwned/VerifyICRC", func() { rocev2.Classifier{VerifyICRC: true}.ClassifyOwned(frame, &m) }},
		{"Classify/DCP", func() { rocev2.Classifier{DCP: true, VerifyICRC: true}.Classify(dcp, &m) }},
		{"Build", func() { rocev2.Build(buf, s) }},
		{"Trim", func() {
			f := buf[:len(dcp)]
			copy(f, dcp)
			rocev2.Classifier{DCP: true}.Classify(f, &m)
			if _, err := rocev2.Trim(f, &m); err != nil {
				panic(err)
			}
		}},
		{"SetICRC", func() {
			rocev2.Classifier{}.Classify(frame, &m)
			m.SetICRC(frame)
		}},
		{"RefreshICRC", func() { rocev2.RefreshICRC(frame, rocev2.Classifier{}) }},
		{"BuildPFC", func() { rocev2.BuildPFC(pfc, fxSrcMAC, 3, [8]uint16{1}) }},
		{"views", func() {
			rocev2.Classifier{}.Classify(frame, &m)
			h := rocev2.BTH(frame[m.BTHOff:])
			h.SetPSN(h.PSN().Add(1))
			h.SetECN(true, false)
			ip := rocev2.IPv4(frame[m.L3Off:])
			ip.SetTTL(ip.TTL() - 1)
			ip.SetDSCP(ip.DSCP())
			rocev2.UDP(frame[m.L4Off:]).SetSrcPort(m.SrcPort)
			e := rocev2.Ethernet(frame)
			e.SetDst(e.Src())
			sh := rocev2.Shim(buf[:8])
			sh.Set(7, rocev2.ShimOriginal, 0, rocev2.EtherTypeIPv4)
			sh.SetAck(sh.Seq())
			n := rocev2.NetRT(buf[8:28])
			n.SetRequest(m.PSN, n.Bitmap().Set(5).Shift())
			rocev2.DCPETH(buf[28:36]).Set(1, 2, 3)
			_ = rocev2.MACControl(pfc[14:]).Time(7)
			_ = m.ExtOff(rocev2.ExtRETH) + m.PayloadLen()
		}},
	}
	for _, c := range cases {
		if a := testing.AllocsPerRun(100, c.f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", c.name, a)
		}
	}
}

// BenchmarkICRCVerify measures ClassifyOwned's ICRC check
// (icrcVerifyOwned) for covered lengths, IP header to ICRC field, with
// crc.Update's AVX-512 kernel ("wide") and with hash/crc32 ("crc32"),
// which from 1024 bytes has a 512-bit kernel of its own with one
// accumulator. On a CPU without VPCLMULQDQ the two are hash/crc32.
// The frame has 2 KB of spare capacity, like a worker's frame slot:
//
//	go test -run '^$' -bench ICRCVerify -count 8 ./rocev2/ > /tmp/v.txt
//	benchstat -col /kernel /tmp/v.txt
func BenchmarkICRCVerify(b *testing.B) {
	defer crc.UseWide(crc.UseWide(true))
	c := rocev2.Classifier{VerifyICRC: true}
	for _, covered := range []int{256, 512, 768, 988, 1008, 1016, 4096} {
		// 44 bytes of IPv4, UDP, BTH, RETH-less WRITE middle and ICRC.
		frame := fxBuild(b, fxSpec(rocev2.RCWriteMiddle, false, false, covered-44))
		buf := make([]byte, len(frame)+2048)
		f := buf[:copy(buf, frame)]
		for _, wide := range []bool{false, true} {
			name := fmt.Sprintf("covered=%d/kernel=crc32", covered)
			if wide {
				name = fmt.Sprintf("covered=%d/kernel=wide", covered)
			}
			b.Run(name, func(b *testing.B) {
				crc.UseWide(wide)
				var m rocev2.Meta
				for b.Loop() {
					c.ClassifyOwned(f, &m)
				}
				if m.Reason != rocev2.ReasonNone || int(m.ICRCOff)+4-int(m.L3Off) != covered {
					b.Fatalf("%v, covered %d", m.Reason, int(m.ICRCOff)+4-int(m.L3Off))
				}
				fxReportMpps(b)
			})
		}
	}
}
