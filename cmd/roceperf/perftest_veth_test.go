package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/afxdp/xdptest"
	"rocetor/nic/perf"
	"rocetor/rocev2"
)

// TestDirectPerftest runs perftest's modes between two namespaces on one
// veth, as a user would: each latency test (write-lat also over irn,
// which may place a message's last packet first), -D bandwidth runs and
// a short -a sweep, each checked end to end.
func TestDirectPerftest(t *testing.T) {
	requireTools(t)
	bin := build(t)
	h := newTwoHosts(t)
	for _, c := range []struct {
		name string
		args []string
		runs int
	}{
		{"write-lat", []string{"write-lat", "-s", "64", "-n", "500"}, 1},
		{"send-lat", []string{"send-lat", "-s", "4096", "-n", "500"}, 1},
		{"read-lat", []string{"read-lat", "-s", "2", "-n", "500"}, 1},
		{"write-lat-irn", []string{"write-lat", "-s", "4096", "-n", "200", "--transport", "irn"}, 1},
		{"write-D", []string{"write", "-s", "4096", "-q", "2", "-D", "1"}, 1},
		{"send-D", []string{"send-bw", "-s", "4096", "-D", "1", "-t", "32", "-r", "1024"}, 1},
		{"write-a", []string{"write", "-a", "-n", "2", "--report-gbits"}, 23},
		{"write-b", []string{"write", "-b", "-s", "4096", "-n", "500", "-q", "2"}, 1},
		{"send-b", []string{"send", "-b", "-s", "4096", "-n", "500"}, 1},
		{"read-b", []string{"read", "-b", "-s", "4096", "-n", "500", "-q", "2"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.runs > 1 {
				// A sweep: one server run per size.
				srv := start(t, h.h2, bin, "serve", "--dev", h.dev2)
				for deadline := time.Now().Add(5 * time.Second); !strings.Contains(srv.errb.String(), "serving on"); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("server not listening: %s", srv.errb.String())
					}
				}
				code, out, errs := runIn(t, h.h1, 30*time.Second, bin, append(c.args, "--dev", h.dev1, "--json", "198.18.7.2")...)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if code != exitOK || len(lines) != c.runs {
					t.Fatalf("client exit %d, %d lines\nstdout: %s\nstderr: %s\nserver: %s", code, len(lines), out, errs, srv.errb.String())
				}
				for i, l := range lines {
					if r := decode(t, l); r.Size != 2<<i || r.Messages != 2 || r.Corrupt != 0 || r.VerifiedBytes != 2*int64(r.Size) {
						t.Errorf("size %d: %s", 2<<i, l)
					}
				}
				srv.cmd.Process.Signal(os.Interrupt)
				srv.wait(t, 5*time.Second)
				return
			}
			srv := serveOnce(t, h.h2, bin, h.dev2)
			start := time.Now()
			code, out, errs := runIn(t, h.h1, 30*time.Second, bin, append(c.args, "--dev", h.dev1, "--json", "198.18.7.2")...)
			if code != exitOK {
				t.Fatalf("client exit %d\nstdout: %s\nstderr: %s\nserver: %s", code, out, errs, srv.errb.String())
			}
			r := decode(t, out)
			if r.Messages == 0 || r.Messages != r.Count || r.Corrupt != 0 || r.VerifiedBytes == 0 || r.Server == nil {
				t.Errorf("report %s", out)
			}
			if v := r.Reverse; strings.HasSuffix(c.name, "-b") {
				if v == nil || v.Messages != r.Count || v.Corrupt != 0 || v.VerifiedBytes != int64(v.Messages)*int64(r.Size) {
					t.Fatalf("way back: %s", out)
				}
				t.Logf("%s: %.3f Gbit/s out, %.3f back", c.name, r.GoodputGbps, v.GoodputGbps)
			}
			if l := r.Lat; l != nil {
				t.Logf("%s %d B × %d: t_min %.2f t_typical %.2f t_avg %.2f p99 %.2f p99.9 %.2f t_max %.2f µs",
					c.name, r.Size, r.Messages, l.Min, l.Typical, l.Avg, l.P99, l.P999, l.Max)
				if !(l.Min > 0 && l.Min <= l.Typical && l.Typical <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
					t.Errorf("latency columns out of order: %+v", l)
				}
			} else {
				t.Logf("%s: %d × %d B in %.3f s: %.3f Gbit/s (peak %.3f), %.4f Mpps", c.name, r.Messages, r.Size,
					r.DurationS, r.GoodputGbps, r.BWPeakGbps, r.MsgRateMpps)
				if d := time.Since(start); strings.HasSuffix(c.name, "-D") && d < time.Second {
					t.Errorf("-D 1 ran %v", d)
				}
			}
			if sc := srv.wait(t, 10*time.Second); sc != exitOK {
				t.Errorf("server exit %d: %s", sc, srv.errb.String())
			}
		})
	}
}

// TestPcap: roceperf --pcap on a host holds every frame the endpoint
// sent and received in a short run — as many as its port counted — each
// a RoCEv2 packet with a correct ICRC, in a nanosecond pcap that tshark
// reads with the shipped dissector (which checks the ICRC again).
func TestPcap(t *testing.T) {
	requireTools(t)
	bin := build(t)
	h := newTwoHosts(t)
	dir := t.TempDir()
	file, srvFile := filepath.Join(dir, "client.pcap"), filepath.Join(dir, "server.pcap")
	srv := start(t, h.h2, bin, "serve", "--dev", h.dev2, "--once", "--pcap", srvFile)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(srv.errb.String(), "serving on"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server not listening: %s", srv.errb.String())
		}
	}
	code, out, errs := runIn(t, h.h1, 30*time.Second, bin, "write", "--dev", h.dev1, "--to", "198.18.7.2",
		"-s", "3000", "-n", "100", "-q", "2", "--pcap", file, "--json")
	if code != exitOK {
		t.Fatalf("client exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if sc := srv.wait(t, 10*time.Second); sc != exitOK {
		t.Fatalf("server exit %d: %s", sc, srv.errb.String())
	}
	r := decode(t, out)
	var sr perf.ServerReport
	if err := json.Unmarshal(bytes.TrimSpace(srv.out.Bytes()), &sr); err != nil {
		t.Fatal(err)
	}
	// 100 WRITEs of 3000 B at MTU 1024 are 300 data packets; the client
	// sends each once more for every time it resent it (an ACK late
	// past the timeout on a busy machine, or a frame the receiver's
	// rings had no room for), and the server sees each of the 300 at
	// least once and no more than the client sent.
	sentData := 300 + int(r.RetxPackets)
	for _, c := range []struct {
		file       string
		sent, recv uint64
		st         *perf.PcapStats
		lo, hi     int // data packets in the file
	}{{file, r.PacketsSent, r.PacketsReceived, r.Pcap, sentData, sentData},
		{srvFile, sr.PacketsSent, sr.PacketsReceived, sr.Pcap, 300, sentData}} {
		frames := readPcap(t, c.file)
		if c.st == nil || c.st.Frames != len(frames) || c.st.Missed != 0 {
			t.Errorf("%s: report says %+v, file holds %d frames", c.file, c.st, len(frames))
		}
		if uint64(len(frames)) != c.sent+c.recv {
			t.Errorf("%s: %d frames, the port sent %d and received %d", c.file, len(frames), c.sent, c.recv)
		}
		var m rocev2.Meta
		data := 0
		for i, f := range frames {
			rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
			if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone {
				t.Fatalf("%s frame %d: kind %v, reason %v", c.file, i, m.Kind, m.Reason)
			}
			if m.PayloadLen() > 0 {
				data++
			}
		}
		if data < c.lo || data > c.hi {
			t.Errorf("%s: %d packets with payload, want %d to %d (300, %d resent)", c.file, data, c.lo, c.hi, r.RetxPackets)
		}
		t.Logf("%s: %d frames (%d with payload), every ICRC good", filepath.Base(c.file), len(frames), data)
	}
	// tshark with the shipped dissector decodes every frame as RoCEv2
	// (standard packets go on to Wireshark's InfiniBand dissector) with
	// the ICRC the Go classifier just checked.
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: the capture is not decoded")
	}
	lua, _ := filepath.Abs("../../rocev2/wireshark/rocetor.lua")
	dec, err := exec.Command(tshark, "-r", file, "-X", "lua_script:"+lua, "-T", "fields", "-E", "separator=,",
		"-e", "infiniband.bth.opcode", "-e", "infiniband.invariant.crc").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(dec)), "\n")
	if len(lines) != r.Pcap.Frames {
		t.Fatalf("tshark read %d frames, want %d:\n%s", len(lines), r.Pcap.Frames, dec)
	}
	for i, f := range readPcap(t, file) {
		// tshark shows the ICRC's four bytes as a big-endian number.
		want := fmt.Sprintf("%#08x", binary.BigEndian.Uint32(f[len(f)-4:]))
		if op, crc, _ := strings.Cut(lines[i], ","); op == "" || crc != want {
			t.Errorf("tshark frame %d: %q, want an opcode and ICRC %s", i, lines[i], want)
			break
		}
	}
}

// readPcap returns the frames of a nanosecond pcap file.
func readPcap(t *testing.T, file string) [][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Resolution() != gopacket.TimestampResolutionNanosecond {
		t.Errorf("%s: timestamps of %v, want nanoseconds", file, pr.Resolution())
	}
	var frames [][]byte
	for {
		d, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		if ci.CaptureLength != ci.Length {
			t.Errorf("frame %d cut to %d of %d bytes", len(frames), ci.CaptureLength, ci.Length)
		}
		frames = append(frames, d)
	}
}

// TestManyHosts: two client hosts and a server on one bridge; serve
// --clients 2 runs both clients' WRITEs and SENDs at once on one
// endpoint, verifies each, and its /metrics, scraped inside the server's
// namespace as a testbed's Prometheus would, counts both runs.
func TestManyHosts(t *testing.T) {
	requireTools(t, "curl")
	bin := build(t)
	sw, srvNs := xdptest.NewNetns(t), xdptest.NewNetns(t)
	sw.IP(t, "link", "add", "br0", "type", "bridge")
	sw.IP(t, "link", "set", "br0", "up")
	attach := func(ns *xdptest.Netns, addr string) string {
		v := xdptest.NewVeth(t, ns, sw)
		sw.IP(t, "link", "set", v.B, "master", "br0")
		ns.IP(t, "addr", "add", addr, "dev", v.A)
		return v.A
	}
	dev2 := attach(srvNs, "198.18.9.2/24")
	clients := []struct {
		ns      *xdptest.Netns
		dev, op string
	}{}
	for i, op := range []string{"write", "send"} {
		ns := xdptest.NewNetns(t)
		clients = append(clients, struct {
			ns      *xdptest.Netns
			dev, op string
		}{ns, attach(ns, fmt.Sprintf("198.18.9.%d/24", 10+i)), op})
	}
	srv := start(t, srvNs, bin, "serve", "--dev", dev2, "--clients", "2", "--metrics", "127.0.0.1:19515")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(srv.errb.String(), "serving on"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server not listening: %s", srv.errb.String())
		}
	}
	type result struct {
		code      int
		out, errs string
	}
	results := make([]chan result, len(clients))
	for i, c := range clients {
		results[i] = make(chan result, 1)
		p := start(t, c.ns, bin, c.op, "--dev", c.dev, "-s", "4096", "-n", "300", "-q", "2", "--json", "198.18.9.2")
		go func() {
			code := p.wait(t, 30*time.Second)
			results[i] <- result{code, p.out.String(), p.errb.String()}
		}()
	}
	for i, c := range clients {
		r := <-results[i]
		if r.code != exitOK {
			t.Fatalf("%s client exit %d: %s%s\nserver: %s", c.op, r.code, r.out, r.errs, srv.errb.String())
		}
		rep := decode(t, r.out)
		t.Logf("%s: %d × %d B at %.3f Gbit/s alongside the other client", c.op, rep.Messages, rep.Size, rep.GoodputGbps)
		if rep.Messages != 300 || rep.Corrupt != 0 || rep.VerifiedBytes != 300*4096 {
			t.Errorf("%s: %s", c.op, r.out)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); strings.Count(srv.out.String(), "\n") < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server reported: %s\n%s", srv.out.String(), srv.errb.String())
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(srv.out.String()), "\n") {
		var sr perf.ServerReport
		if err := json.Unmarshal([]byte(l), &sr); err != nil || sr.Clients != 2 || sr.Round != 1 || sr.Error != "" || sr.Corrupt != 0 {
			t.Errorf("server line %q: %v", l, err)
		}
	}
	out, err := exec.Command("ip", "netns", "exec", srvNs.Name, "curl", "-sf", "http://127.0.0.1:19515/metrics").Output()
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	for _, want := range []string{`rocetor_roceperf_runs_total{result="ok"} 2`, "rocetor_roceperf_verified_bytes_total 2.4576e+06"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	if !strings.Contains(string(out), "rocetor_roceperf_packets_received_total") {
		t.Errorf("metrics:\n%s", out)
	}
	srv.cmd.Process.Signal(os.Interrupt)
	if code := srv.wait(t, 5*time.Second); code != exitOK {
		t.Errorf("server exit %d after SIGINT: %s", code, srv.errb.String())
	}
}
