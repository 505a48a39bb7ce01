package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"rocetor/tor/lab"
)

// apps runs iperf3 and ping in the hosts' namespaces (lab.Apps), each
// run's output kept in the testbed's logs.
type apps struct {
	plan   *lab.Plan
	logDir string
	port   int // iperf3's
	seq    atomic.Int64
}

// iperf3Port is the iperf3 server's port: its default.
const iperf3Port = 5201

// TCP starts iperf3 -s -1 on the receiving host, waits until it
// listens, runs iperf3 -c -J on the sending host for the flow's
// duration and reads the client's JSON: the receiver's throughput and
// the sender's retransmissions.
func (a *apps) TCP(ctx context.Context, f lab.TCPFlow) (*lab.TCPResult, error) {
	from, to := a.plan.Node(f.From), a.plan.Node(f.To)
	if from == nil || to == nil {
		return nil, fmt.Errorf("tcp %s → %s: no such host", f.From, f.To)
	}
	bin, err := exec.LookPath("iperf3")
	if err != nil {
		return nil, fmt.Errorf("roce-tcp needs iperf3 in PATH (apt-get install iperf3): %w", err)
	}
	base := filepath.Join(a.logDir, fmt.Sprintf("iperf3-%03d", a.seq.Add(1)))
	srvLog, err := os.Create(base + "-server.log")
	if err != nil {
		return nil, fmt.Errorf("iperf3 log: %w", err)
	}
	defer srvLog.Close()
	port := strconv.Itoa(a.port)
	srv := exec.Command("ip", "netns", "exec", to.Netns, bin, "-s", "-1", "-p", port)
	srv.Stdout, srv.Stderr = srvLog, srvLog
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start iperf3 -s on %s: %w", f.To, err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	defer func() {
		select {
		case <-srvDone:
		case <-time.After(5 * time.Second):
			srv.Process.Kill()
			<-srvDone
		}
	}()
	if err := waitListening(ctx, srv.Process.Pid, a.port, srvDone, 15*time.Second); err != nil {
		srv.Process.Kill()
		return nil, fmt.Errorf("iperf3 -s on %s: %w; its log %s:\n%s", f.To, err, srvLog.Name(), tail(srvLog.Name(), 20))
	}
	secs := strconv.FormatFloat(f.Duration.Seconds(), 'f', -1, 64)
	cctx, cancel := context.WithTimeout(ctx, f.Duration+30*time.Second)
	defer cancel()
	args := []string{"netns", "exec", from.Netns, bin, "-c", a.plan.Addr(f.To).String(), "-p", port, "-t", secs, "-J"}
	cli := exec.CommandContext(cctx, "ip", args...)
	var stdout bytes.Buffer
	cli.Stdout = &stdout
	cli.Stderr = srvLog
	cli.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cli.Cancel = func() error { return cli.Process.Signal(syscall.SIGTERM) }
	cli.WaitDelay = stopGrace
	cerr := cli.Run()
	if err := os.WriteFile(base+"-client.json", stdout.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("iperf3 log: %w", err)
	}
	res, perr := ParseIperf3(stdout.Bytes())
	if cerr != nil || perr != nil {
		if res == nil {
			return nil, fmt.Errorf("iperf3 %s → %s: %w", f.From, f.To, errors.Join(cerr, perr))
		}
		return res, fmt.Errorf("iperf3 %s → %s: %w", f.From, f.To, errors.Join(cerr, perr))
	}
	return res, nil
}

// ParseIperf3 reads iperf3 -J's output: the receiver's throughput and
// bytes (end.sum_received), the sender's retransmissions
// (end.sum_sent.retransmits), the start time and duration. An "error"
// iperf3 reported is returned with whatever it measured.
func ParseIperf3(b []byte) (*lab.TCPResult, error) {
	var j struct {
		Start struct {
			Timestamp struct {
				Timesecs int64 `json:"timesecs"`
			} `json:"timestamp"`
		} `json:"start"`
		End struct {
			SumSent struct {
				Retransmits int64 `json:"retransmits"`
			} `json:"sum_sent"`
			SumReceived struct {
				Seconds       float64 `json:"seconds"`
				Bytes         int64   `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &j); err != nil {
		return nil, fmt.Errorf("iperf3 -J output: %w", err)
	}
	r := &lab.TCPResult{Gbps: j.End.SumReceived.BitsPerSecond / 1e9, Retransmits: j.End.SumSent.Retransmits,
		Bytes: j.End.SumReceived.Bytes, Seconds: j.End.SumReceived.Seconds}
	if ts := j.Start.Timestamp.Timesecs; ts > 0 {
		r.Start = time.Unix(ts, 0).UTC()
		r.End = r.Start.Add(time.Duration(r.Seconds * float64(time.Second)))
	}
	if j.Error != "" {
		return r, fmt.Errorf("iperf3: %s", j.Error)
	}
	return r, nil
}

// Ping pings to from from every interval until ctx ends, then stops
// ping (SIGINT, as a user would) and reads its replies. ctx ending is
// how it ends, not an error.
func (a *apps) Ping(ctx context.Context, from, to string, interval time.Duration) (*lab.PingResult, error) {
	f := a.plan.Node(from)
	if f == nil || a.plan.Node(to) == nil {
		return nil, fmt.Errorf("ping %s → %s: no such host", from, to)
	}
	iv := strconv.FormatFloat(interval.Seconds(), 'f', -1, 64)
	cmd := exec.Command("ip", "netns", "exec", f.Netns, "ping", "-n", "-i", iv, a.plan.Addr(to).String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ping in %s: %w", from, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
		werr = fmt.Errorf("ping %s → %s ended by itself: %v", from, to, werr)
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(stopGrace):
			cmd.Process.Kill()
			<-done
		}
	}
	log := filepath.Join(a.logDir, fmt.Sprintf("ping-%03d.log", a.seq.Add(1)))
	os.WriteFile(log, out.Bytes(), 0o644)
	return ParsePing(out.Bytes()), werr
}

var (
	pingReply = regexp.MustCompile(`icmp_seq=\d+ .*time=([0-9.]+) ms`)
	pingSent  = regexp.MustCompile(`^(\d+) packets transmitted`)
)

// ParsePing reads ping's output: a round-trip time per reply line and
// the packets transmitted from its summary (the replies' count if it
// printed none).
func ParsePing(b []byte) *lab.PingResult {
	p := &lab.PingResult{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if m := pingReply.FindStringSubmatch(l); m != nil && !strings.Contains(l, "DUP!") {
			if ms, err := strconv.ParseFloat(m[1], 64); err == nil {
				p.RTTus = append(p.RTTus, ms*1000)
			}
		} else if m := pingSent.FindStringSubmatch(l); m != nil {
			p.Sent, _ = strconv.Atoi(m[1])
		}
	}
	p.Sent = max(p.Sent, len(p.RTTus))
	return p
}
