package rocev2_test

// TestTShark cross-checks the builders against an independent decoder:
// it builds one frame of every kind the project reads or writes, writes
// them to a pcap and compares, frame by frame and field by field, what
// tshark decodes with what rocev2's own views read from the same bytes.
// It runs tshark three times: with Wireshark's dissectors only, with the
// project's Lua dissector (rocev2/wireshark/rocetor.lua), and with the Lua
// dissector and its DCP preference on, and with both its DCP and SACK
// preferences on. A second pass per configuration
// prints every packet with -V and fails on malformed packets, Lua errors
// and error-level expert items. tshark shows the ICRC of standard packets
// without checking it; the Lua dissector checks the ICRC of the packets it
// decodes with its own CRC code, so Trim's recomputed ICRC of header-only
// packets is checked by an independent implementation. docs/wire-formats.md explains how to
// repeat the check by hand.

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math/bits"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

var tsharkPcap = flag.String("tshark.pcap", "", "also write TestTShark's capture to this file")

const tsLuaScript = "wireshark/rocetor.lua"

// tsStdFields are tshark's names for the fields the test compares
// (tshark -G fields lists them).
var tsStdFields = []string{
	"vlan.id", "vlan.priority",
	"ip.dsfield.dscp", "ipv6.tclass.dscp",
	"infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m",
	"infiniband.bth.padcnt", "infiniband.bth.p_key", "infiniband.bth.destqp",
	"infiniband.bth.a", "infiniband.bth.psn",
	"infiniband.aeth.syndrome", "infiniband.aeth.msn",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.deth.q_key", "infiniband.deth.srcqp",
	"infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
	"infiniband.atomicacketh.origremdt",
	"infiniband.immdt", "infiniband.ieth",
	"infiniband.invariant.crc",
	"macc.opcode", "macc.pause_time", "macc.cbfc.enbv",
	"macc.cbfc.pause_time.c0", "macc.cbfc.pause_time.c1", "macc.cbfc.pause_time.c2",
	"macc.cbfc.pause_time.c3", "macc.cbfc.pause_time.c4", "macc.cbfc.pause_time.c5",
	"macc.cbfc.pause_time.c6", "macc.cbfc.pause_time.c7",
}

// tsLuaFields are the Lua dissector's fields, documented at the top of
// rocetor.lua and in docs/wire-formats.md.
var tsLuaFields = []string{
	"rocetor.shim.seq", "rocetor.shim.era", "rocetor.shim.ack_valid",
	"rocetor.shim.ack_era", "rocetor.shim.reserved", "rocetor.shim.type",
	"rocetor.shim.count", "rocetor.shim.ack", "rocetor.shim.inner_type",
	"rocetor.shim.link_seq", "rocetor.shim.link_ack", "rocetor.shim.epoch", "rocetor.shim.echo",
	"rocetor.bth.opcode", "rocetor.bth.se", "rocetor.bth.m", "rocetor.bth.padcnt",
	"rocetor.bth.tver", "rocetor.bth.pkey", "rocetor.bth.fecn", "rocetor.bth.becn",
	"rocetor.bth.destqp", "rocetor.bth.ackreq", "rocetor.bth.psn",
	"rocetor.netrt.type", "rocetor.netrt.epsn", "rocetor.netrt.psn",
	"rocetor.netrt.bitmap", "rocetor.netrt.arrived",
	"rocetor.dcp.tag", "rocetor.dcp.msn", "rocetor.dcp.retry", "rocetor.dcp.ssn",
	"rocetor.dcp.reserved", "rocetor.dcp.header_only",
	"rocetor.sack.psn", "rocetor.sack.flags", "rocetor.sack.fnack", "rocetor.sack.lost_overflow",
	"rocetor.sack.lost_cnt", "rocetor.sack.reserved",
	"rocetor.deth.qkey", "rocetor.deth.srcqp", "rocetor.feth",
	"rocetor.reth.va", "rocetor.reth.rkey", "rocetor.reth.dmalen",
	"rocetor.atomiceth.va", "rocetor.atomiceth.rkey", "rocetor.atomiceth.swapadd",
	"rocetor.atomiceth.compare",
	"rocetor.aeth.syndrome", "rocetor.aeth.type", "rocetor.aeth.value", "rocetor.aeth.msn",
	"rocetor.atomicack.origdata", "rocetor.immdt", "rocetor.ieth.rkey",
	"rocetor.payload", "rocetor.pad",
	"rocetor.icrc", "rocetor.icrc.computed", "rocetor.icrc.status",
}

// tsharkUnknown are opcodes rocev2 builds that Wireshark 4.0's RoCEv2
// dissector does not know: it shows their BTH and then the rest of the
// packet, ICRC included, as "Unknown/Vendor Specific Data".
var tsharkUnknown = map[rocev2.Opcode]bool{
	rocev2.CNP:           true,
	rocev2.RCFlush:       true,
	rocev2.RCAtomicWrite: true,
	rocev2.NetRTOpcode:   true,
}

// A tsCase is one frame of the capture.
type tsCase struct {
	name  string
	frame []byte
	// expert, when set, is an error-level expert message the Lua
	// dissector must show for this frame (a deliberately broken frame).
	expert string
	// badICRC marks a frame whose ICRC is deliberately wrong.
	badICRC bool
	// dcp marks a DCP packet. Without the DCP preference Wireshark reads
	// it as standard RoCEv2, which it is not: the test then compares only
	// its Ethernet and IP fields.
	dcp bool
}

// A tsConfig is one way of running tshark over the capture.
type tsConfig struct {
	name string
	lua  bool // load rocetor.lua
	dcp  bool // and set rocetor.dcp:TRUE
	sack bool // and set rocetor.sack:TRUE
}

var tsConfigs = []tsConfig{
	{name: "wireshark"},
	{name: "lua", lua: true},
	{name: "lua+dcp", lua: true, dcp: true},
	{name: "lua+dcp+sack", lua: true, dcp: true, sack: true},
}

func TestTShark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: apt-get install tshark")
	}
	// The expectations are those of Wireshark 4.0 (Debian 12's tshark);
	// a later release may know more opcodes (see tsharkUnknown).
	if v, err := exec.Command(tshark, "-v").Output(); err == nil {
		t.Log(strings.SplitN(string(v), "\n", 2)[0])
	}
	cases := tsharkCases(t)
	dir := t.TempDir()
	pcap := filepath.Join(dir, "rocetor.pcap")
	tsWritePcap(t, pcap, cases)
	if *tsharkPcap != "" {
		tsWritePcap(t, *tsharkPcap, cases)
	}
	// A private configuration directory keeps the user's preferences and
	// personal plugins out of the comparison.
	env := append(os.Environ(), "WIRESHARK_CONFIG_DIR="+filepath.Join(dir, "wsconfig"), "XDG_CONFIG_HOME="+dir)

	for _, cfg := range tsConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			names := tsStdFields
			if cfg.lua {
				names = append(slices.Clone(tsStdFields), tsLuaFields...)
			}
			args := cfg.args()
			args = append(args, "-r", pcap, "-T", "fields", "-E", "separator=/t", "-E", "header=n",
				"-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number")
			for _, n := range names {
				args = append(args, "-e", n)
			}
			out := tsRun(t, tshark, env, args)
			rows := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(rows) != len(cases) {
				t.Fatalf("tshark printed %d rows for %d frames:\n%s", len(rows), len(cases), out)
			}
			set := 0
			for i, row := range rows {
				c := cases[i]
				cols := strings.Split(row, "\t")
				if len(cols) != len(names)+1 || cols[0] != strconv.Itoa(i+1) {
					t.Fatalf("frame %d (%s): malformed row %q", i+1, c.name, row)
				}
				got := map[string]string{}
				for j, n := range names {
					got[n] = cols[j+1]
				}
				want, partial := tsExpect(t, c, cfg)
				if partial {
					for _, n := range names {
						if strings.HasPrefix(n, "infiniband.") {
							got[n] = ""
						}
					}
				}
				for _, d := range tsDiff(names, got, want) {
					t.Errorf("frame %d (%s): %s", i+1, c.name, d)
				}
				set += len(want)
			}
			t.Logf("%d frames × %d fields compared, %d of them non-empty", len(rows), len(names), set)

			// The verbose pass: no malformed packets, no Lua errors, and
			// error-level expert items only where a case expects one.
			vargs := append(cfg.args(), "-r", pcap, "-V")
			verbose := tsRun(t, tshark, env, vargs)
			frames := tsSplitFrames(verbose)
			if len(frames) != len(cases) {
				t.Fatalf("tshark -V printed %d frames for %d", len(frames), len(cases))
			}
			for i, text := range frames {
				c := cases[i]
				if _, partial := tsExpect(t, c, cfg); partial {
					// A DCP packet read as standard RoCEv2 may well look
					// malformed to Wireshark; that is what the
					// preference is for.
					continue
				}
				for _, bad := range []string{"Malformed Packet", "Lua Error", "Dissector bug", "[Expert Info (Error"} {
					if strings.Contains(text, bad) && !(c.expert != "" && cfg.lua && bad == "[Expert Info (Error") {
						t.Errorf("frame %d (%s): tshark -V shows %q:\n%s", i+1, c.name, bad, text)
					}
				}
				if c.expert != "" && cfg.lua && !strings.Contains(text, c.expert) {
					t.Errorf("frame %d (%s): tshark -V lacks the expert item %q:\n%s", i+1, c.name, c.expert, text)
				}
			}
		})
	}

	// The comparison above must be able to fail: the same machinery with
	// one deliberately wrong expectation reports exactly that field.
	t.Run("catches-wrong-expectation", func(t *testing.T) {
		c := cases[0]
		want, _ := tsExpect(t, c, tsConfigs[0])
		got := maps.Clone(want)
		p, _ := strconv.Atoi(want["infiniband.bth.psn"])
		want["infiniband.bth.psn"] = strconv.Itoa(p + 1)
		d := tsDiff(tsStdFields, got, want)
		if len(d) != 1 || !strings.Contains(d[0], "infiniband.bth.psn") {
			t.Fatalf("tsDiff with a wrong PSN = %q, want one infiniband.bth.psn mismatch", d)
		}
	})
}

func (c tsConfig) args() []string {
	// rocev2 leaves the UDP checksum zero over IPv6 as over IPv4 (the
	// ICRC protects the packet; RFC 6935 zero-checksum mode); Wireshark
	// flags that as an error unless told otherwise.
	a := []string{"-o", "udp.ignore_ipv6_zero_checksum:TRUE"}
	if c.lua {
		a = append(a, "-X", "lua_script:"+tsLuaScript)
	}
	if c.dcp {
		a = append(a, "-o", "rocetor.dcp:TRUE")
	}
	if c.sack {
		a = append(a, "-o", "rocetor.sack:TRUE")
	}
	return a
}

func tsRun(t *testing.T, tshark string, env, args []string) string {
	t.Helper()
	cmd := exec.Command(tshark, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "Running as user") {
			continue
		}
		t.Errorf("tshark %s: stderr: %s", strings.Join(args, " "), line)
	}
	return stdout.String()
}

var tsFrameHeader = regexp.MustCompile(`(?m)^Frame \d+: `)

// tsSplitFrames splits tshark -V output into one text per frame.
func tsSplitFrames(out string) []string {
	idx := tsFrameHeader.FindAllStringIndex(out, -1)
	var frames []string
	for i, loc := range idx {
		end := len(out)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		frames = append(frames, out[loc[0]:end])
	}
	return frames
}

// tsDiff lists the fields whose tshark value differs from the
// expected one; a field missing from want must be absent (empty).
func tsDiff(names []string, got, want map[string]string) []string {
	var d []string
	for _, n := range names {
		if got[n] != want[n] {
			d = append(d, fmt.Sprintf("%s = %q, want %q", n, got[n], want[n]))
		}
	}
	for n := range want {
		if !slices.Contains(names, n) {
			d = append(d, fmt.Sprintf("%s expected but not requested from tshark", n))
		}
	}
	return d
}

func tsWritePcap(t *testing.T, path string, cases []tsCase) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		ci := gopacket.CaptureInfo{
			Timestamp:     time.Unix(1_700_000_000, int64(i)*1000),
			CaptureLength: len(c.frame),
			Length:        len(c.frame),
		}
		if err := w.WritePacket(ci, c.frame); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// tsExpect returns the fields tshark must show for case c under cfg, read
// from the frame with rocev2's own classifier and views. partial is true
// for a DCP packet that Wireshark's own dissector reads as standard
// RoCEv2: want then holds its Ethernet and IP fields only, and the
// infiniband.* fields are not compared.
func tsExpect(t *testing.T, c tsCase, cfg tsConfig) (want map[string]string, partial bool) {
	b := c.frame
	want = map[string]string{}
	var m rocev2.Meta
	rocev2.Classifier{DCP: cfg.dcp}.Classify(b, &m)
	// With the SACK preference the dissector reads an RC ACK with exactly
	// a SACKETH's 8 bytes after its AETH as a SACK ACK, as SACK mode does.
	sack := cfg.sack && m.Kind == rocev2.KindRoCE && m.Reason == rocev2.ReasonNone && m.Opcode == rocev2.RCAck &&
		m.Ext&rocev2.ExtAETH != 0 && m.PayloadLen() == rocev2.SACKLen && m.PadCount == 0
	if sack {
		rocev2.Classifier{DCP: cfg.dcp, SACK: true}.Classify(b, &m)
	}
	if m.VLAN {
		want["vlan.id"] = strconv.Itoa(int(m.VID))
		want["vlan.priority"] = strconv.Itoa(int(m.PCP))
	}
	if m.ShimOff != 0 {
		if !cfg.lua {
			return want, false // Wireshark has no dissector for 0x88b5
		}
		tsShimFields(want, rocev2.Shim(b[m.ShimOff:]))
	}
	switch m.Kind {
	case rocev2.KindMACControl:
		c := rocev2.MACControl(b[m.L3Off:])
		want["macc.opcode"] = fmt.Sprintf("0x%04x", c.Opcode())
		if c.Opcode() == rocev2.MACControlPause {
			want["macc.pause_time"] = strconv.Itoa(int(c.PauseTime()))
		} else {
			want["macc.cbfc.enbv"] = fmt.Sprintf("0x%04x", c.ClassEnable())
			for p := 0; p < 8; p++ {
				want[fmt.Sprintf("macc.cbfc.pause_time.c%d", p)] = strconv.Itoa(int(c.Time(p)))
			}
		}
		return want, false
	case rocev2.KindIP, rocev2.KindRoCE:
	default:
		return want, false
	}
	if m.IPVersion == 4 {
		want["ip.dsfield.dscp"] = strconv.Itoa(int(m.DSCP))
	} else {
		want["ipv6.tclass.dscp"] = strconv.Itoa(int(m.DSCP))
	}
	if m.Kind != rocev2.KindRoCE {
		return want, false
	}
	if cfg.lua && (m.Opcode == rocev2.NetRTOpcode || m.Opcode == rocev2.CNP || cfg.dcp && m.Tag != rocev2.DCPNone || sack) {
		if m.Reason != rocev2.ReasonNone && m.Reason != rocev2.ReasonBadNetRT {
			t.Fatalf("%s: rocev2 classifies the frame as %v", c.name, m.Reason)
		}
		tsLuaRoCE(want, b, &m, c)
		return want, false
	}
	if c.dcp {
		return want, true
	}
	if m.Reason != rocev2.ReasonNone && m.Reason != rocev2.ReasonBadNetRT {
		t.Fatalf("%s: rocev2 classifies the frame as %v", c.name, m.Reason)
	}
	tsStdRoCE(want, b, &m)
	return want, false
}

func tsBool(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

func tsShimFields(want map[string]string, s rocev2.Shim) {
	seq, ack := s.Seq(), s.Ack()
	want["rocetor.shim.seq"] = strconv.Itoa(int(seq.Seq()))
	want["rocetor.shim.era"] = tsBool(seq.Era())
	want["rocetor.shim.ack_valid"] = tsBool(s.HasAck())
	want["rocetor.shim.ack_era"] = tsBool(ack.Era())
	want["rocetor.shim.reserved"] = fmt.Sprintf("0x%02x", s[2]&0x18)
	want["rocetor.shim.type"] = strconv.Itoa(int(s.Type()))
	want["rocetor.shim.count"] = strconv.Itoa(int(s.Count()))
	want["rocetor.shim.ack"] = strconv.Itoa(int(ack.Seq()))
	want["rocetor.shim.inner_type"] = fmt.Sprintf("0x%04x", s.InnerType())
	want["rocetor.shim.link_seq"] = strconv.Itoa(int(seq))
	if s.HasAck() {
		want["rocetor.shim.link_ack"] = strconv.Itoa(int(ack))
	}
	if s.Type() == rocev2.ShimSync {
		want["rocetor.shim.epoch"] = strconv.Itoa(int(s.SyncEpoch()))
		want["rocetor.shim.echo"] = strconv.Itoa(int(s.SyncEcho()))
	}
}

// tsStdRoCE adds what Wireshark's own RoCEv2 dissector shows.
func tsStdRoCE(want map[string]string, b []byte, m *rocev2.Meta) {
	h := rocev2.BTH(b[m.BTHOff:])
	want["infiniband.bth.opcode"] = strconv.Itoa(int(h.Opcode()))
	want["infiniband.bth.se"] = tsBool(h.SE())
	want["infiniband.bth.m"] = tsBool(h.MigReq())
	want["infiniband.bth.padcnt"] = strconv.Itoa(h.PadCount())
	want["infiniband.bth.p_key"] = strconv.Itoa(int(h.PKey()))
	want["infiniband.bth.destqp"] = fmt.Sprintf("0x%06x", h.DestQP())
	want["infiniband.bth.a"] = tsBool(h.AckReq())
	want["infiniband.bth.psn"] = strconv.Itoa(int(h.PSN()))
	if tsharkUnknown[h.Opcode()] {
		return
	}
	if o := m.ExtOff(rocev2.ExtAETH); o != 0 {
		a := rocev2.AETH(b[o:])
		want["infiniband.aeth.syndrome"] = strconv.Itoa(int(a.Syndrome()))
		want["infiniband.aeth.msn"] = strconv.Itoa(int(a.MSN()))
	}
	if o := m.ExtOff(rocev2.ExtRETH); o != 0 {
		r := rocev2.RETH(b[o:])
		want["infiniband.reth.va"] = fmt.Sprintf("0x%016x", r.VA())
		want["infiniband.reth.r_key"] = fmt.Sprintf("0x%08x", r.RKey())
		want["infiniband.reth.dmalen"] = strconv.Itoa(int(r.DMALen()))
	}
	if o := m.ExtOff(rocev2.ExtAtomicETH); o != 0 {
		// Wireshark shows the AtomicETH's address and key with the
		// RETH's fields.
		a := rocev2.AtomicETH(b[o:])
		want["infiniband.reth.va"] = fmt.Sprintf("0x%016x", a.VA())
		want["infiniband.reth.r_key"] = fmt.Sprintf("0x%08x", a.RKey())
		want["infiniband.atomiceth.swapdt"] = strconv.FormatUint(a.SwapAdd(), 10)
		want["infiniband.atomiceth.cmpdt"] = strconv.FormatUint(a.Compare(), 10)
	}
	if o := m.ExtOff(rocev2.ExtAtomicAck); o != 0 {
		want["infiniband.atomicacketh.origremdt"] = strconv.FormatUint(rocev2.AtomicAck(b[o:]).OrigData(), 10)
	}
	if o := m.ExtOff(rocev2.ExtDETH); o != 0 {
		d := rocev2.DETH(b[o:])
		want["infiniband.deth.q_key"] = fmt.Sprintf("0x%016x", d.QKey())
		want["infiniband.deth.srcqp"] = fmt.Sprintf("0x%08x", d.SrcQP())
	}
	// Wireshark uses the same name for the ImmDt and IETH header items
	// and for the value inside them, so each shows up twice.
	if o := m.ExtOff(rocev2.ExtImmDt); o != 0 {
		v := fmt.Sprintf("%08x", rocev2.ImmDt(b[o:]).Value())
		want["infiniband.immdt"] = v + "," + v
	}
	if o := m.ExtOff(rocev2.ExtIETH); o != 0 {
		v := fmt.Sprintf("%08x", rocev2.IETH(b[o:]).RKey())
		want["infiniband.ieth"] = v + "," + v
	}
	// Wireshark 4.0 stops after the AETH of an ACK that carries more
	// bytes — a SACK ACK read without SACK mode — and shows neither them
	// nor the ICRC.
	if h.Opcode() == rocev2.RCAck && m.PayloadLen() > 0 {
		return
	}
	// Wireshark reads the ICRC as a big-endian word; rocev2 stores it
	// little-endian, as Linux rxe and ConnectX NICs do.
	want["infiniband.invariant.crc"] = fmt.Sprintf("0x%08x", bits.ReverseBytes32(m.ComputeICRC(b)))
}

// tsLuaRoCE adds what rocetor.lua shows for a NetRT or DCP packet.
func tsLuaRoCE(want map[string]string, b []byte, m *rocev2.Meta, c tsCase) {
	h := rocev2.BTH(b[m.BTHOff:])
	want["rocetor.bth.opcode"] = fmt.Sprintf("0x%02x", uint8(h.Opcode()))
	want["rocetor.bth.se"] = tsBool(h.SE())
	want["rocetor.bth.m"] = tsBool(h.MigReq())
	want["rocetor.bth.padcnt"] = strconv.Itoa(h.PadCount())
	want["rocetor.bth.tver"] = strconv.Itoa(int(h.TVer()))
	want["rocetor.bth.pkey"] = fmt.Sprintf("0x%04x", h.PKey())
	want["rocetor.bth.fecn"] = tsBool(h.FECN())
	want["rocetor.bth.becn"] = tsBool(h.BECN())
	want["rocetor.bth.destqp"] = fmt.Sprintf("0x%06x", h.DestQP())
	want["rocetor.bth.ackreq"] = tsBool(h.AckReq())
	want["rocetor.bth.psn"] = strconv.Itoa(int(h.PSN()))
	if m.Ext&rocev2.ExtDCP != 0 {
		want["rocetor.dcp.tag"] = strconv.Itoa(int(m.Tag))
		d := rocev2.DCPETH(b[m.ExtOff(rocev2.ExtDCP):])
		want["rocetor.dcp.msn"] = strconv.Itoa(int(d.MSN()))
		want["rocetor.dcp.retry"] = strconv.Itoa(int(d.RetryNo()))
		want["rocetor.dcp.ssn"] = strconv.Itoa(int(d.SSN()))
		want["rocetor.dcp.reserved"] = "0x00"
		if m.Tag == rocev2.DCPHeaderOnly {
			want["rocetor.dcp.header_only"] = "1"
		}
	}
	if o := m.ExtOff(rocev2.ExtDETH); o != 0 {
		d := rocev2.DETH(b[o:])
		want["rocetor.deth.qkey"] = fmt.Sprintf("0x%08x", d.QKey())
		want["rocetor.deth.srcqp"] = fmt.Sprintf("0x%06x", d.SrcQP())
	}
	if o := m.ExtOff(rocev2.ExtFETH); o != 0 {
		want["rocetor.feth"] = fmt.Sprintf("0x%08x", rocev2.FETH(b[o:]).Selectivity())
	}
	if o := m.ExtOff(rocev2.ExtRETH); o != 0 {
		r := rocev2.RETH(b[o:])
		want["rocetor.reth.va"] = fmt.Sprintf("0x%016x", r.VA())
		want["rocetor.reth.rkey"] = fmt.Sprintf("0x%08x", r.RKey())
		want["rocetor.reth.dmalen"] = strconv.Itoa(int(r.DMALen()))
	}
	if o := m.ExtOff(rocev2.ExtAtomicETH); o != 0 {
		a := rocev2.AtomicETH(b[o:])
		want["rocetor.atomiceth.va"] = fmt.Sprintf("0x%016x", a.VA())
		want["rocetor.atomiceth.rkey"] = fmt.Sprintf("0x%08x", a.RKey())
		want["rocetor.atomiceth.swapadd"] = strconv.FormatUint(a.SwapAdd(), 10)
		want["rocetor.atomiceth.compare"] = strconv.FormatUint(a.Compare(), 10)
	}
	if o := m.ExtOff(rocev2.ExtAETH); o != 0 {
		a := rocev2.AETH(b[o:])
		want["rocetor.aeth.syndrome"] = fmt.Sprintf("0x%02x", uint8(a.Syndrome()))
		want["rocetor.aeth.type"] = strconv.Itoa(int(a.Syndrome().Type()>>5) & 3)
		want["rocetor.aeth.value"] = strconv.Itoa(int(a.Syndrome().Value()))
		want["rocetor.aeth.msn"] = strconv.Itoa(int(a.MSN()))
	}
	if o := m.ExtOff(rocev2.ExtSACK); o != 0 {
		x := rocev2.SACKETH(b[o:])
		want["rocetor.sack.psn"] = strconv.Itoa(int(x.PSN()))
		want["rocetor.sack.flags"] = fmt.Sprintf("0x%02x", x.Flags())
		want["rocetor.sack.fnack"] = tsBool(x.Flags()&rocev2.SACKFNACK != 0)
		want["rocetor.sack.lost_overflow"] = tsBool(x.Flags()&rocev2.SACKLostOverflow != 0)
		want["rocetor.sack.lost_cnt"] = strconv.Itoa(int(x.LostCnt()))
		want["rocetor.sack.reserved"] = "0x000000"
	}
	if o := m.ExtOff(rocev2.ExtAtomicAck); o != 0 {
		want["rocetor.atomicack.origdata"] = strconv.FormatUint(rocev2.AtomicAck(b[o:]).OrigData(), 10)
	}
	if o := m.ExtOff(rocev2.ExtImmDt); o != 0 {
		want["rocetor.immdt"] = fmt.Sprintf("0x%08x", rocev2.ImmDt(b[o:]).Value())
	}
	if o := m.ExtOff(rocev2.ExtIETH); o != 0 {
		want["rocetor.ieth.rkey"] = fmt.Sprintf("0x%08x", rocev2.IETH(b[o:]).RKey())
	}
	if m.Ext&rocev2.ExtNetRT != 0 {
		n := rocev2.NetRT(b[m.BTHOff+rocev2.BTHLen+uint16(m.Ext.Len()):])
		want["rocetor.netrt.type"] = strconv.Itoa(int(n.Type()))
		switch n.Type() {
		case rocev2.NetRTRequest:
			want["rocetor.netrt.epsn"] = strconv.Itoa(int(n.PSN()))
			want["rocetor.netrt.bitmap"] = fmt.Sprintf("%x", []byte(n[4:20]))
			bm := n.Bitmap()
			want["rocetor.netrt.arrived"] = strconv.Itoa(bits.OnesCount64(bm.Hi) + bits.OnesCount64(bm.Lo))
		case rocev2.NetRTUnfulfilled:
			want["rocetor.netrt.psn"] = strconv.Itoa(int(n.PSN()))
		default:
			return // the dissector stops at an unknown type
		}
	}
	if n := m.PayloadLen(); n > 0 {
		want["rocetor.payload"] = fmt.Sprintf("%x", b[m.PayloadOff:int(m.PayloadOff)+n])
	}
	if m.PadCount > 0 {
		want["rocetor.pad"] = strings.Repeat("00", int(m.PadCount))
	}
	stored, computed := m.ICRC(b), m.ComputeICRC(b)
	want["rocetor.icrc"] = fmt.Sprintf("0x%08x", stored)
	want["rocetor.icrc.computed"] = fmt.Sprintf("0x%08x", computed)
	if c.badICRC {
		want["rocetor.icrc.status"] = "2"
	} else {
		want["rocetor.icrc.status"] = "1"
	}
}

// Addresses of the test frames.
var (
	tsMACA = rocev2.MAC{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	tsMACB = rocev2.MAC{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
	tsV4A  = netip.MustParseAddr("10.0.1.2")
	tsV4B  = netip.MustParseAddr("10.0.2.3")
	tsV6A  = netip.MustParseAddr("fd00:1::2")
	tsV6B  = netip.MustParseAddr("fd00:2::3")
)

// tsPayload returns n bytes of a pattern no payload heuristic of Wireshark
// (RPC-over-RDMA, iSER, NVMe-oF, SMB Direct, …) claims. SEND payloads in
// the capture are at least 13 bytes long: Wireshark 4.0's RPC-over-RDMA
// heuristic ("rpcrdma_infiniband") throws on shorter ones and marks a
// perfectly good packet "[Malformed Packet: RPCoRDMA]".
func tsPayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = 0xa0 | byte(i&0x0f)
	}
	return p
}

// tsBuild fills in addresses and builds s, failing the test on error.
func tsBuild(t *testing.T, s rocev2.Spec) []byte {
	t.Helper()
	if s.Src == (rocev2.MAC{}) {
		s.Src, s.Dst = tsMACA, tsMACB
	}
	if !s.SrcIP.IsValid() {
		s.SrcIP, s.DstIP = tsV4A, tsV4B
	}
	buf := make([]byte, 2048)
	n, err := rocev2.Build(buf, &s)
	if err != nil {
		t.Fatalf("Build(%v): %v", s.Opcode, err)
	}
	return buf[:n]
}

// tsV6 turns s into IPv6, keeping the direction of its IPv4 addresses.
func tsV6(s rocev2.Spec) rocev2.Spec {
	if s.SrcIP == tsV4B {
		s.SrcIP, s.DstIP = tsV6B, tsV6A
	} else {
		s.SrcIP, s.DstIP = tsV6A, tsV6B
	}
	return s
}

func tsVLAN(s rocev2.Spec, vid uint16, pcp uint8) rocev2.Spec {
	s.VLAN, s.VID, s.PCP = true, vid, pcp
	return s
}

// tsTrim classifies a DCP data frame and trims it to a header-only packet.
func tsTrim(t *testing.T, b []byte) []byte {
	t.Helper()
	var m rocev2.Meta
	rocev2.Classifier{DCP: true, VerifyICRC: true}.Classify(b, &m)
	n, err := rocev2.Trim(b, &m)
	if err != nil {
		t.Fatalf("Trim: %v (meta %+v)", err, m)
	}
	return b[:n]
}

// tsWithShim wraps a frame in the link shim: the shim takes the place of the
// L3 header, its InnerType the frame's EtherType.
func tsWithShim(t *testing.T, inner []byte, seq psn.Link, typ uint8, ack *psn.Link) []byte {
	t.Helper()
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(inner, &m)
	if m.Reason != rocev2.ReasonNone || m.L3Off == 0 {
		t.Fatalf("withShim: inner frame %v/%v", m.Kind, m.Reason)
	}
	l2 := int(m.L3Off)
	end := int(m.End)
	if m.Kind == rocev2.KindMACControl {
		end = len(inner)
	}
	out := make([]byte, 0, end+rocev2.ShimLen+rocev2.MinFrameLen)
	out = append(out, inner[:l2]...)
	out = append(out, make([]byte, rocev2.ShimLen)...)
	out = append(out, inner[l2:end]...)
	rocev2.Ethernet(out).SetInnerType(rocev2.EtherTypeShim)
	s := rocev2.Shim(out[l2:])
	s.Set(seq, typ, 0, m.EtherType)
	if ack != nil {
		s.SetAck(*ack)
	}
	for len(out) < rocev2.MinFrameLen {
		out = append(out, 0)
	}
	return out
}

// tsLinkCtrl builds a shim-only frame: dummy, ACK or loss notice.
func tsLinkCtrl(seq psn.Link, typ, count uint8, ack *psn.Link) []byte {
	b := make([]byte, rocev2.MinFrameLen)
	e := rocev2.Ethernet(b)
	e.SetDst(tsMACB)
	e.SetSrc(tsMACA)
	e.SetType(rocev2.EtherTypeShim)
	s := rocev2.Shim(b[rocev2.EthernetLen:])
	s.Set(seq, typ, count, 0)
	if ack != nil {
		s.SetAck(*ack)
	}
	return b
}

func tsharkCases(t *testing.T) []tsCase {
	var cs []tsCase
	add := func(name string, b []byte) {
		cs = append(cs, tsCase{name: name, frame: b, dcp: strings.Contains(name, "dcp")})
	}
	spec := func(op rocev2.Opcode, n int) rocev2.Spec {
		return rocev2.Spec{Opcode: op, DestQP: 0x00a1b2, PSN: 0x000102, DSCP: 24, Payload: tsPayload(n)}
	}

	// RC SEND, every position, with immediate and with invalidate; pad
	// counts 0–3 through the payload lengths.
	rc := rocev2.Spec{Opcode: rocev2.RCSendFirst, DestQP: 0x000111, PSN: 7, DSCP: 24, Payload: tsPayload(256)}
	add("rc-send-first", tsBuild(t, rc))
	rc.Opcode, rc.PSN, rc.Payload = rocev2.RCSendMiddle, 8, tsPayload(255)
	add("rc-send-middle", tsBuild(t, rc))
	rc.Opcode, rc.PSN, rc.Payload, rc.AckReq = rocev2.RCSendLast, 9, tsPayload(254), true
	add("rc-send-last", tsBuild(t, rc))
	s := spec(rocev2.RCSendLastImm, 253)
	s.Imm, s.SE = 0xcafebabe, true
	add("rc-send-last-imm", tsBuild(t, s))
	add("rc-send-only", tsBuild(t, spec(rocev2.RCSendOnly, 64)))
	s = spec(rocev2.RCSendOnlyImm, 1)
	s.Imm = 0x01020304
	add("rc-send-only-imm", tsBuild(t, s))
	s = spec(rocev2.RCSendLastInvalidate, 100)
	s.RKey = 0x0badf00d
	add("rc-send-last-inv", tsBuild(t, s))
	s.Opcode = rocev2.RCSendOnlyInvalidate
	add("rc-send-only-inv", tsBuild(t, s))

	// RC WRITE.
	w := rocev2.Spec{Opcode: rocev2.RCWriteFirst, DestQP: 0x00abcd, PSN: 0xfffffe, DSCP: 24,
		VA: 0x00007f00deadbeef, RKey: 0x12345678, DMALen: 3000, Payload: tsPayload(1024)}
	add("rc-write-first", tsBuild(t, w))
	w.Opcode, w.PSN = rocev2.RCWriteMiddle, 0xffffff
	add("rc-write-middle", tsBuild(t, w))
	w.Opcode, w.PSN, w.Payload = rocev2.RCWriteLast, 0, tsPayload(952)
	add("rc-write-last", tsBuild(t, w))
	w.Opcode, w.Imm = rocev2.RCWriteLastImm, 0x0000beef
	add("rc-write-last-imm", tsBuild(t, w))
	w.Opcode, w.Payload, w.DMALen = rocev2.RCWriteOnly, tsPayload(37), 37
	add("rc-write-only", tsBuild(t, w))
	w.Opcode = rocev2.RCWriteOnlyImm
	add("rc-write-only-imm", tsBuild(t, w))

	// RC READ.
	r := rocev2.Spec{Opcode: rocev2.RCReadRequest, DestQP: 0x000222, PSN: 500, DSCP: 24,
		VA: 0x1000, RKey: 0xfeedface, DMALen: 8192, AckReq: true}
	add("rc-read-request", tsBuild(t, r))
	rr := rocev2.Spec{Opcode: rocev2.RCReadResponseFirst, DestQP: 0x000333, PSN: 500, DSCP: 24,
		Syndrome: rocev2.ACKSyndrome(31), AckMSN: 41, Payload: tsPayload(1024)}
	add("rc-read-response-first", tsBuild(t, rr))
	rr.Opcode, rr.PSN = rocev2.RCReadResponseMiddle, 501
	add("rc-read-response-middle", tsBuild(t, rr))
	rr.Opcode, rr.PSN, rr.Payload = rocev2.RCReadResponseLast, 502, tsPayload(6)
	add("rc-read-response-last", tsBuild(t, rr))
	rr.Opcode, rr.PSN, rr.AckMSN = rocev2.RCReadResponseOnly, 503, 42
	add("rc-read-response-only", tsBuild(t, rr))

	// RC ACK with every kind of syndrome.
	for _, a := range []struct {
		name string
		syn  rocev2.Syndrome
	}{
		{"ack-credits-31", rocev2.ACKSyndrome(31)},
		{"ack-credits-5", rocev2.ACKSyndrome(5)},
		{"nak-psn-seq-error", rocev2.NAKSyndrome(rocev2.NakPSNSeqError)},
		{"rnr-nak", rocev2.RNRSyndrome(14)},
		{"nak-invalid-request", rocev2.NAKSyndrome(rocev2.NakInvalidReq)},
		{"nak-remote-access", rocev2.NAKSyndrome(rocev2.NakRemoteAccess)},
		{"nak-remote-op", rocev2.NAKSyndrome(rocev2.NakRemoteOpError)},
	} {
		add("rc-"+a.name, tsBuild(t, rocev2.Spec{Opcode: rocev2.RCAck, DestQP: 0x000444, PSN: 77, DSCP: 24,
			Syndrome: a.syn, AckMSN: 0x123456}))
	}

	// Atomics.
	at := rocev2.Spec{Opcode: rocev2.RCCompareSwap, DestQP: 0x000555, PSN: 9, DSCP: 24,
		VA: 0x00000000c0ffee00, RKey: 0x0a0b0c0d, SwapAdd: 1 << 40, Compare: 12345}
	add("rc-compare-swap", tsBuild(t, at))
	at.Opcode, at.SwapAdd, at.Compare = rocev2.RCFetchAdd, 1, 0
	add("rc-fetch-add", tsBuild(t, at))
	add("rc-atomic-ack", tsBuild(t, rocev2.Spec{Opcode: rocev2.RCAtomicAck, DestQP: 0x000666, PSN: 9, DSCP: 24,
		Syndrome: rocev2.ACKSyndrome(31), AckMSN: 3, OrigData: 0xfffffffffffffffe}))
	add("rc-flush", tsBuild(t, rocev2.Spec{Opcode: rocev2.RCFlush, DestQP: 0x000777, PSN: 10, DSCP: 24,
		VA: 0x2000, RKey: 0x77, DMALen: 4096, FETH: 0x00000011}))
	add("rc-atomic-write", tsBuild(t, rocev2.Spec{Opcode: rocev2.RCAtomicWrite, DestQP: 0x000777, PSN: 11, DSCP: 24,
		VA: 0x2008, RKey: 0x77, DMALen: 8, Payload: tsPayload(8)}))

	// UC and UD.
	uc := rocev2.Spec{DestQP: 0x000888, PSN: 1, DSCP: 24, VA: 0x3000, RKey: 0x88, DMALen: 512, Imm: 0x11223344, Payload: tsPayload(128)}
	for _, op := range []rocev2.Opcode{rocev2.UCSendFirst, rocev2.UCSendMiddle, rocev2.UCSendLast,
		rocev2.UCSendLastImm, rocev2.UCSendOnly, rocev2.UCSendOnlyImm, rocev2.UCWriteFirst,
		rocev2.UCWriteMiddle, rocev2.UCWriteLast, rocev2.UCWriteLastImm, rocev2.UCWriteOnly,
		rocev2.UCWriteOnlyImm} {
		uc.Opcode = op
		uc.PSN++
		add(strings.ToLower(op.String()), tsBuild(t, uc))
	}
	// Not to QP 1: Wireshark takes those for management datagrams and
	// shows neither payload nor ICRC.
	ud := rocev2.Spec{Opcode: rocev2.UDSendOnly, DestQP: 0x000123, PSN: 33, DSCP: 24,
		QKey: 0x11110000, SrcQP: 0x00c0de, Payload: tsPayload(40)}
	add("ud-send-only", tsBuild(t, ud))
	ud.Opcode, ud.Imm = rocev2.UDSendOnlyImm, 0xa5a5a5a5
	add("ud-send-only-imm", tsBuild(t, ud))

	// Congestion notification.
	add("cnp", tsBuild(t, rocev2.Spec{Opcode: rocev2.CNP, DestQP: 0x000999, DSCP: 48, BECN: true, Payload: make([]byte, rocev2.CNPLen)}))

	// BTH flags, ECN and the header variants: IPv6, VLAN, both.
	fl := spec(rocev2.RCSendOnly, 15)
	fl.SE, fl.MigReq, fl.AckReq, fl.FECN, fl.ECN, fl.PKey, fl.TTL = true, true, true, true, 3, 0x8001, 2
	add("rc-send-only-flags", tsBuild(t, fl))
	add("v6-rc-write-only-imm", tsBuild(t, tsV6(w)))
	add("v6-rc-ack-rnr", tsBuild(t, tsV6(rocev2.Spec{Opcode: rocev2.RCAck, DestQP: 0x000444, PSN: 78, DSCP: 24,
		Syndrome: rocev2.RNRSyndrome(1), AckMSN: 1, FlowLabel: 0xabcde})))
	add("v6-ud-send-only-imm", tsBuild(t, tsV6(ud)))
	add("v6-rc-fetch-add", tsBuild(t, tsV6(at)))
	add("v6-cnp", tsBuild(t, tsV6(rocev2.Spec{Opcode: rocev2.CNP, DestQP: 0x000999, DSCP: 48, Payload: make([]byte, rocev2.CNPLen)})))
	add("vlan-rc-send-only", tsBuild(t, tsVLAN(spec(rocev2.RCSendOnly, 14), 100, 3)))
	add("vlan-v6-rc-read-request", tsBuild(t, tsVLAN(tsV6(r), 4094, 5)))

	// PFC and PAUSE.
	buf := make([]byte, rocev2.MinFrameLen)
	if _, err := rocev2.BuildPFC(buf, tsMACA, 0b1010_0101, [8]uint16{0xffff, 0, 1000, 0, 0, 7, 0, 65534}); err != nil {
		t.Fatal(err)
	}
	add("pfc-pause", slices.Clone(buf))
	if _, err := rocev2.BuildPFC(buf, tsMACA, 0x08, [8]uint16{}); err != nil {
		t.Fatal(err)
	}
	add("pfc-resume", slices.Clone(buf))
	if _, err := rocev2.BuildPause(buf, tsMACA, 0xffff); err != nil {
		t.Fatal(err)
	}
	add("pause", slices.Clone(buf))
	if _, err := rocev2.BuildPause(buf, tsMACA, 0); err != nil {
		t.Fatal(err)
	}
	add("pause-resume", slices.Clone(buf))

	// NetRT: request and unfulfilled notice, sent along the served flow's
	// reversed addresses with the served flow's destination QP.
	nr := rocev2.Spec{Src: tsMACB, Dst: tsMACA, SrcIP: tsV4B, DstIP: tsV4A, Opcode: rocev2.NetRTOpcode,
		DestQP: 0x00a1b2, PSN: 1000, DSCP: 24, NetRTType: rocev2.NetRTRequest, NetRTPSN: 1000,
		Bitmap: rocev2.Bitmap128{}.Set(0).Set(2).Set(63).Set(64).Set(127)}
	add("netrt-request", tsBuild(t, nr))
	nr.PSN, nr.NetRTPSN, nr.Bitmap = 0xfffffe, 0xfffffe, rocev2.Bitmap128{Lo: 1}
	add("netrt-request-wrap", tsBuild(t, nr))
	add("v6-netrt-request", tsBuild(t, tsV6(nr)))
	nu := nr
	nu.NetRTType, nu.NetRTPSN, nu.PSN = rocev2.NetRTUnfulfilled, 1001, 1001
	add("netrt-unfulfilled", tsBuild(t, nu))
	add("v6-vlan-netrt-unfulfilled", tsBuild(t, tsVLAN(tsV6(nu), 7, 6)))

	// DCP: the tag in the two low DSCP bits (26 = 0b011010: tag 10, data;
	// 25: tag 01, ACK), the DCP extension header after the BTH, a RETH in
	// every WRITE packet, header-only packets made by Trim.
	dw := rocev2.Spec{DCP: true, Opcode: rocev2.RCWriteFirst, DestQP: 0x000d0d, PSN: 200, DSCP: 26,
		MSN: 17, Retry: 1, VA: 0x10000, RKey: 0xd0d0, DMALen: 3072, Payload: tsPayload(1024)}
	add("dcp-write-first", tsBuild(t, dw))
	dw.Opcode, dw.PSN = rocev2.RCWriteMiddle, 201
	add("dcp-write-middle", tsBuild(t, dw))
	dw.Opcode, dw.PSN, dw.ECN = rocev2.RCWriteLast, 202, 3
	add("dcp-write-last-ce", tsBuild(t, dw))
	dw.Opcode, dw.SSN, dw.Imm, dw.ECN = rocev2.RCWriteLastImm, 5, 0x600d600d, 0
	add("dcp-write-last-imm", tsBuild(t, dw))
	ds := rocev2.Spec{DCP: true, Opcode: rocev2.RCSendFirst, DestQP: 0x000d0e, PSN: 300, DSCP: 26,
		MSN: 18, SSN: 6, Payload: tsPayload(1024)}
	add("dcp-send-first", tsBuild(t, ds))
	ds.Opcode, ds.PSN, ds.Payload = rocev2.RCSendLast, 301, tsPayload(9)
	add("v6-dcp-send-last", tsBuild(t, tsV6(ds)))
	dw.Opcode, dw.PSN, dw.Payload = rocev2.RCWriteMiddle, 203, tsPayload(1024)
	add("dcp-ho-write-middle", tsTrim(t, tsBuild(t, dw)))
	dw.Opcode, dw.PSN = rocev2.RCWriteFirst, 200
	add("dcp-ho-write-first", tsTrim(t, tsBuild(t, dw)))
	ds.Opcode, ds.PSN = rocev2.RCSendFirst, 300
	add("v6-dcp-ho-send-first", tsTrim(t, tsBuild(t, tsV6(ds))))
	add("vlan-dcp-ho-write-first", tsTrim(t, tsBuild(t, tsVLAN(dw, 200, 2))))
	add("dcp-ack", tsBuild(t, rocev2.Spec{DCP: true, Opcode: rocev2.RCAck, DestQP: 0x000d0f, PSN: 301, DSCP: 25,
		MSN: 19, Retry: 1, Syndrome: rocev2.ACKSyndrome(31), AckMSN: 19}))
	add("v6-dcp-ack", tsBuild(t, tsV6(rocev2.Spec{DCP: true, Opcode: rocev2.RCAck, DestQP: 0x000d0f, PSN: 302, DSCP: 25,
		MSN: 20, Syndrome: rocev2.NAKSyndrome(rocev2.NakPSNSeqError), AckMSN: 19})))

	// SACK ACKs (IRN, FaSR): the SACKETH after the AETH. Without the
	// SACK preference Wireshark shows an ACK with 8 bytes of data.
	add("sack-nak", tsBuild(t, rocev2.Spec{SACK: true, Opcode: rocev2.RCAck, DestQP: 0x000e0e, PSN: 400, DSCP: 24,
		Syndrome: rocev2.NAKSyndrome(rocev2.NakPSNSeqError), AckMSN: 3, SACKPSN: 405}))
	add("v6-sack-ack", tsBuild(t, tsV6(rocev2.Spec{SACK: true, Opcode: rocev2.RCAck, DestQP: 0x000e0e, PSN: 0xffffff,
		DSCP: 24, Syndrome: rocev2.ACKSyndrome(31), AckMSN: 4, SACKPSN: 2})))
	add("sack-fnack", tsBuild(t, rocev2.Spec{SACK: true, Opcode: rocev2.RCAck, DestQP: 0x000e0e, PSN: 410, DSCP: 24,
		Syndrome: rocev2.NAKSyndrome(rocev2.NakPSNSeqError), SACKPSN: 412,
		SACKFlags: rocev2.SACKFNACK | rocev2.SACKLostOverflow, LostCnt: 7}))
	add("vlan-dcp-sack-ack", tsBuild(t, tsVLAN(rocev2.Spec{DCP: true, SACK: true, Opcode: rocev2.RCAck, DestQP: 0x000d0f,
		PSN: 303, DSCP: 25, MSN: 21, Syndrome: rocev2.ACKSyndrome(31), AckMSN: 21, SACKPSN: 306, LostCnt: 1}, 9, 1)))

	// The OOO layout (IRN, FaSR): a RETH in every WRITE packet, a SETH
	// in every SEND packet. Neither dissector decodes it: Wireshark shows
	// the extra header as the start of the payload.
	ow := rocev2.Spec{OOO: true, Opcode: rocev2.RCWriteMiddle, DestQP: 0x000e0f, PSN: 500, DSCP: 24,
		VA: 0x20400, RKey: 0xe0e0, DMALen: 4096, Payload: tsPayload(1024)}
	add("ooo-write-middle", tsBuild(t, ow))
	os := rocev2.Spec{OOO: true, Opcode: rocev2.RCSendLast, DestQP: 0x000e0f, PSN: 503, DSCP: 24,
		SSN: 2, PktIndex: 3, Payload: tsPayload(100)}
	add("ooo-send-last", tsBuild(t, os))

	// The link shim around each kind of payload, and on its own.
	ack5 := psn.LinkOf(5, false)
	ackEra := psn.LinkOf(12, true)
	add("shim-original-rc-write-only-imm", tsWithShim(t, tsBuild(t, w), psn.LinkOf(10, false), rocev2.ShimOriginal, nil))
	add("shim-retransmit-v6-rc-ack", tsWithShim(t, tsBuild(t, tsV6(rocev2.Spec{Opcode: rocev2.RCAck, DestQP: 0x000444, PSN: 79,
		DSCP: 24, Syndrome: rocev2.ACKSyndrome(31), AckMSN: 2})), psn.LinkOf(0xffff, true), rocev2.ShimRetransmit, &ack5))
	add("shim-original-netrt-request", tsWithShim(t, tsBuild(t, nr), psn.LinkOf(11, false), rocev2.ShimOriginal, &ackEra))
	dw.Opcode, dw.PSN = rocev2.RCWriteMiddle, 204
	add("shim-original-dcp-write-middle", tsWithShim(t, tsBuild(t, dw), psn.LinkOf(12, false), rocev2.ShimOriginal, nil))
	add("vlan-shim-original-rc-send-only", tsWithShim(t, tsBuild(t, tsVLAN(spec(rocev2.RCSendOnly, 14), 100, 3)),
		psn.LinkOf(13, true), rocev2.ShimOriginal, &ack5))
	add("shim-dummy", tsLinkCtrl(psn.LinkOf(14, false), rocev2.ShimDummy, 0, nil))
	add("shim-ack", tsLinkCtrl(psn.LinkOf(0, false), rocev2.ShimAck, 0, &ackEra))
	add("shim-loss", tsLinkCtrl(psn.LinkOf(20, false), rocev2.ShimLoss, 3, &ack5))
	add("shim-watch-rc-write-middle", tsWithShim(t, tsBuild(t, spec(rocev2.RCWriteMiddle, 15)), psn.LinkOf(15, false), rocev2.ShimWatch, nil))
	add("shim-protect", tsLinkCtrl(psn.LinkOf(0, false), rocev2.ShimProtect, rocev2.LossCode(1e-3), &ack5))
	sync := tsLinkCtrl(0, rocev2.ShimSync, 0, nil)
	rocev2.Shim(sync[rocev2.EthernetLen:]).SetSync(psn.LinkOf(300, true), rocev2.SyncNeed, 4242, 513)
	add("shim-sync", sync)

	// Deliberately broken frames: the Lua dissector must say so.
	bad := tsBuild(t, nu)
	bad[len(bad)-1] ^= 0xff
	cs = append(cs, tsCase{name: "netrt-bad-icrc", frame: bad, expert: "ICRC mismatch", badICRC: true})
	badType := tsBuild(t, nu)
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(badType, &m)
	badType[m.PayloadOff-rocev2.NetRTUnfulfilledLen] = 7
	cs = append(cs, tsCase{name: "netrt-bad-type", frame: badType, expert: "Unknown NetRT message type"})

	tsCheckCases(t, cs)
	return cs
}

// tsCheckCases verifies what the comparison relies on: every RoCEv2 frame
// carries the ICRC rocev2 computes for it (except the deliberately broken
// one), and the header-only packets have the lengths the docs promise.
func tsCheckCases(t *testing.T, cs []tsCase) {
	t.Helper()
	hoLen := map[string]int{
		"dcp-ho-write-middle":     66, // 14+20+8+12+8+4
		"dcp-ho-write-first":      66,
		"v6-dcp-ho-send-first":    86, // 14+40+8+12+8+4
		"vlan-dcp-ho-write-first": 70,
	}
	for _, c := range cs {
		if n, ok := hoLen[c.name]; ok && len(c.frame) != n {
			t.Errorf("%s: header-only frame is %d bytes, want %d", c.name, len(c.frame), n)
		}
		var m rocev2.Meta
		rocev2.Classifier{DCP: c.dcp, SACK: strings.Contains(c.name, "sack"), OOO: strings.Contains(c.name, "ooo"),
			VerifyICRC: true}.Classify(c.frame, &m)
		switch {
		case c.name == "netrt-bad-type":
			if m.Reason != rocev2.ReasonBadNetRT {
				t.Errorf("%s: classified %v, want %v", c.name, m.Reason, rocev2.ReasonBadNetRT)
			}
		case c.badICRC:
			if m.Reason != rocev2.ReasonBadICRC {
				t.Errorf("%s: classified %v, want %v", c.name, m.Reason, rocev2.ReasonBadICRC)
			}
		case m.Reason != rocev2.ReasonNone:
			t.Errorf("%s: classified %v/%v", c.name, m.Kind, m.Reason)
		}
	}
}
