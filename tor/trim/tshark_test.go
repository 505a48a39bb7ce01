package trim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/rocev2"
)

// TestTSharkHO captures the header-only packets the stage sends — IPv4,
// IPv6 and VLAN-tagged, from WRITE and SEND packets — and decodes them
// with tshark and the project's Lua dissector with its DCP preference on
// (tshark -X lua_script:rocev2/wireshark/rocetor.lua -o rocetor.dcp:TRUE),
// which checks their ICRC with its own CRC code: every one must show DCP
// tag 3 (header-only), its PSN, a good ICRC, and no error.
func TestTSharkHO(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: apt-get install tshark")
	}
	r := newRig(t, Config{Threshold: 1}, rigOpt{})
	v6s, v6d := "fd01::2", "fd02::3"
	specs := []rocev2.Spec{
		{DCP: true, DSCP: 26, Opcode: rocev2.RCWriteMiddle, DestQP: 0xd0d, PSN: 203, MSN: 17, Retry: 1, SSN: 5, Payload: make([]byte, 1024)},
		{DCP: true, DSCP: 26, Opcode: rocev2.RCWriteFirst, DestQP: 0xd0d, PSN: 200, MSN: 17, VA: 0x1000, RKey: 7, DMALen: 4096, Payload: make([]byte, 1024)},
		{DCP: true, DSCP: 26, Opcode: rocev2.RCSendLast, DestQP: 0xd0e, PSN: 301, MSN: 18, SSN: 6, Payload: make([]byte, 9)},
		{DCP: true, DSCP: 46, Opcode: rocev2.RCWriteOnlyImm, DestQP: 0xd0f, PSN: 0xffffff, MSN: 19, SSN: 7, Imm: 9, Payload: make([]byte, 1500)},
	}
	v6 := specs[2]
	v6.SrcIP, v6.DstIP = netip.MustParseAddr(v6s), netip.MustParseAddr(v6d)
	vlan := specs[0]
	vlan.VLAN, vlan.VID, vlan.PCP, vlan.PSN = true, 200, 3, 204
	specs = append(specs, v6, vlan)
	for i := range specs {
		r.send(build(t, &specs[i]))
	}
	r.step(1000)
	if len(r.sent) != len(specs) {
		t.Fatalf("sent %d frames, want %d", len(r.sent), len(specs))
	}
	dir := t.TempDir()
	pcap := filepath.Join(dir, "ho.pcap")
	writePcap(t, pcap, r.sent)
	env := append(os.Environ(), "WIRESHARK_CONFIG_DIR="+filepath.Join(dir, "wsconfig"), "XDG_CONFIG_HOME="+dir)
	base := []string{"-X", "lua_script:../../rocev2/wireshark/rocetor.lua", "-o", "rocetor.dcp:TRUE",
		"-o", "udp.ignore_ipv6_zero_checksum:TRUE", "-r", pcap}
	fields := []string{"frame.len", "rocetor.dcp.tag", "rocetor.dcp.header_only", "rocetor.bth.psn", "rocetor.dcp.msn", "rocetor.icrc.status"}
	args := append(append([]string(nil), base...), "-T", "fields", "-E", "separator=/t")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out := runTShark(t, tshark, env, args)
	rows := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(rows) != len(specs) {
		t.Fatalf("tshark printed %d rows for %d frames:\n%s", len(rows), len(specs), out)
	}
	for i, row := range rows {
		s := &specs[i]
		var m rocev2.Meta
		rocev2.Classifier{DCP: true}.Classify(r.sent[i], &m)
		want := []string{strconv.Itoa(len(r.sent[i])), "3", "1", strconv.Itoa(int(s.PSN)), strconv.Itoa(int(s.MSN)), "1"}
		got := strings.Split(row, "\t")
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("frame %d: tshark %s = %v, want %v", i+1, strings.Join(fields, ","), got, want)
		}
		if l := len(r.sent[i]); l != int(m.ICRCOff)+rocev2.ICRCLen && l != rocev2.MinFrameLen {
			t.Errorf("frame %d: %d bytes, ICRC ends at %d", i+1, l, int(m.ICRCOff)+rocev2.ICRCLen)
		}
	}
	if l := len(r.sent[0]); l != HOLen {
		t.Errorf("IPv4 HO packet of %d bytes, want %d", l, HOLen)
	}
	verbose := runTShark(t, tshark, env, append(append([]string(nil), base...), "-V"))
	for _, bad := range []string{"Malformed Packet", "Lua Error", "Dissector bug", "[Expert Info (Error"} {
		if strings.Contains(verbose, bad) {
			t.Errorf("tshark -V shows %q:\n%s", bad, verbose)
		}
	}
}

func runTShark(t *testing.T, tshark string, env, args []string) string {
	t.Helper()
	cmd := exec.Command(tshark, args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, "Running as user") {
			t.Errorf("tshark stderr: %s", line)
		}
	}
	return string(out)
}

func writePcap(t *testing.T, path string, frames [][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, b := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(1_700_000_000, int64(i)*1000), CaptureLength: len(b), Length: len(b)}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
