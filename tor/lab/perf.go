package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transfer is one roceperf run: a server on To, a client on From.
type Transfer struct {
	Op        string `json:"op"` // write, send or read
	From      string `json:"from"`
	To        string `json:"to"`
	Size      int    `json:"size"`  // bytes per message
	Count     int    `json:"count"` // messages
	QPs       int    `json:"qps"`
	Transport string `json:"transport"`
	MTU       int    `json:"mtu,omitempty"`
	Depth     int    `json:"depth,omitempty"` // messages in flight per QP; 0: roceperf's
	Rate      string `json:"rate,omitempty"`  // the client's pacing; empty: roceperf's default
	BDP       int    `json:"bdp,omitempty"`   // packets IRN's and FaSR's SR state is sized for; 0: roceperf's (128)
	// Poll is both endpoints' roceperf --poll (a round's server takes
	// the first transfer's); empty: roceperf's default, adaptive.
	Poll string `json:"poll,omitempty"`
	// CC is roceperf's --cc (none, fixed, dcqcn); empty: roceperf's
	// default, none.
	CC       string `json:"cc,omitempty"`
	LineRate string `json:"line_rate,omitempty"` // --line-rate: where DCQCN starts and returns to; empty: Rate
	// DCQCN sets ConnectX DCQCN parameters by their flag names without
	// the --dcqcn- prefix, e.g. rpg-time-reset: 300.
	DCQCN   map[string]string `json:"dcqcn,omitempty"`
	Timeout time.Duration     `json:"timeout"`
}

// FCT is a flow-completion-time summary in microseconds.
type FCT struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
	Mean  float64 `json:"mean"`
	Max   float64 `json:"max"`
}

// Summary is roceperf's JSON summary (roceperf … --json).
type Summary struct {
	Transport   string  `json:"transport"`
	Op          string  `json:"op"`
	Size        int64   `json:"size"`
	Count       int64   `json:"count"`
	QPs         int64   `json:"qps"`
	Messages    int64   `json:"messages"`
	Bytes       int64   `json:"bytes"`
	DurationS   float64 `json:"duration_s"`
	GoodputGbps float64 `json:"goodput_gbps"`
	// Start and End are the run's first post and last completion on
	// the wall clock (roceperf's start and end; zero from a roceperf
	// without them).
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	FCT             FCT       `json:"fct_us"`
	RetxPackets     int64     `json:"retx_packets"`
	Timeouts        int64     `json:"timeouts"`
	NaksReceived    int64     `json:"naks_received"`
	NaksSent        int64     `json:"naks_sent"`
	PacketsSent     int64     `json:"packets_sent"`
	PacketsReceived int64     `json:"packets_received"`
	VerifiedBytes   int64     `json:"verified_bytes"`
	Corrupt         int64     `json:"corrupt"`
	EndpointDrops
	// Server is what the client reports of the server's endpoint.
	Server *EndpointDrops `json:"server,omitempty"`
}

// EndpointDrops are an endpoint's drops of DCP header-only packets, by
// reason (roceperf's ho_drops).
type EndpointDrops struct {
	HODrops map[string]int64 `json:"ho_drops,omitempty"`
}

// PerfResult is what one Transfer gave.
type PerfResult struct {
	Client    Summary         `json:"client"`
	ClientRaw json.RawMessage `json:"client_raw,omitempty"` // the JSON as printed, with any fields Summary lacks
	Server    json.RawMessage `json:"server,omitempty"`     // the server's JSON, if it printed one
}

// Perf runs transfers between the testbed's hosts. roceperf is the real
// one; tests use a fake.
type Perf interface {
	Transfer(ctx context.Context, t Transfer) (*PerfResult, error)
	// Round runs transfers that share their receiving host at once, as
	// one round of one server (roceperf serve --clients), and returns
	// their results in order, nil for one that reported nothing.
	Round(ctx context.Context, ts []Transfer) ([]*PerfResult, error)
}

// roceperf runs the roceperf binary in the hosts' namespaces.
type roceperf struct {
	bin    string // the binary
	plan   *Plan
	logDir string
	port   int // the server's control port
	seq    atomic.Int64
}

// roceperfPort is the server's control port (perftest's default).
const roceperfPort = 18515

// ErrPerf wraps a transfer that roceperf reported as failed.
var ErrPerf = errors.New("roceperf failed")

// Transfer starts roceperf serve --once on the receiving host, waits
// until it listens, runs the client on the sending host and reads its
// JSON summary, then waits for the server to exit: a round of one.
func (r *roceperf) Transfer(ctx context.Context, t Transfer) (*PerfResult, error) {
	res, err := r.Round(ctx, []Transfer{t})
	return res[0], err
}

// Round runs transfers into one receiving host at once: one roceperf
// serve --once --clients N there, which serves them as one round on one
// endpoint (docs/roceperf.md, "Many clients"), and a client per
// transfer on its sending host, all started together once the server
// listens. Each sending host runs one endpoint, so the transfers come
// from different hosts. The results are in the transfers' order, nil
// for a client that reported nothing; the errors are joined.
func (r *roceperf) Round(ctx context.Context, ts []Transfer) ([]*PerfResult, error) {
	out := make([]*PerfResult, len(ts))
	to := r.plan.Node(ts[0].To)
	timeout := ts[0].Timeout
	seen := map[string]bool{}
	for _, t := range ts {
		if r.plan.Node(t.From) == nil || to == nil {
			return out, fmt.Errorf("transfer %s → %s: no such host", t.From, t.To)
		}
		if t.To != ts[0].To || seen[t.From] {
			return out, fmt.Errorf("transfer %s → %s: a round takes one receiver and a sending host per transfer", t.From, t.To)
		}
		seen[t.From] = true
		timeout = max(timeout, t.Timeout)
	}
	n := r.seq.Add(1)
	listen := fmt.Sprintf("%s:%d", r.plan.Addr(ts[0].To), r.port)
	base := filepath.Join(r.logDir, fmt.Sprintf("roceperf-%03d", n))

	srvOut := &bytes.Buffer{}
	srvLog, err := os.Create(base + "-server.log")
	if err != nil {
		return out, fmt.Errorf("roceperf log: %w", err)
	}
	defer srvLog.Close()
	args := []string{"netns", "exec", to.Netns, r.bin, "serve", "--dev", "eth0", "--listen", listen, "--once",
		"--timeout", timeout.String()}
	if len(ts) > 1 {
		args = append(args, "--clients", strconv.Itoa(len(ts)))
	}
	if ts[0].Poll != "" {
		args = append(args, "--poll", ts[0].Poll)
	}
	srv := exec.Command("ip", args...)
	srv.Stdout, srv.Stderr = srvOut, srvLog
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		return out, fmt.Errorf("start roceperf serve on %s: %w", ts[0].To, err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	stopServer := func() error {
		select {
		case err := <-srvDone:
			return err
		default:
		}
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-srvDone:
			return err
		case <-time.After(stopGrace):
			srv.Process.Kill()
			return <-srvDone
		}
	}
	defer stopServer()
	if err := waitListening(ctx, srv.Process.Pid, r.port, srvDone, 15*time.Second); err != nil {
		return out, fmt.Errorf("roceperf serve on %s: %w; its log %s:\n%s", ts[0].To, err, srvLog.Name(), tail(srvLog.Name(), 20))
	}

	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		log := base + "-client.log"
		if len(ts) > 1 {
			log = base + "-client-" + t.From + ".log"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = r.client(ctx, t, listen, log)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	// With --once the server ends after its one round.
	select {
	case <-srvDone:
		srvDone <- nil // for the deferred stopServer
	case <-time.After(10 * time.Second):
		fmt.Fprintf(srvLog, "# testbed: still running 10s after the clients ended; stopped\n")
	}
	for i, t := range ts {
		if len(ts) == 1 {
			out[i].Server = lastJSON(srvOut.Bytes())
		} else {
			out[i].Server = serverLine(srvOut.Bytes(), r.plan.Addr(t.From).String())
		}
	}
	return out, nil
}

// client runs one transfer's client against the server at listen and
// reads its JSON summary.
func (r *roceperf) client(ctx context.Context, t Transfer, listen, log string) (*PerfResult, error) {
	from := r.plan.Node(t.From)
	args := []string{"netns", "exec", from.Netns, r.bin, t.Op, "--dev", "eth0", "--to", listen,
		"--size", strconv.Itoa(t.Size), "--count", strconv.Itoa(t.Count), "--qps", strconv.Itoa(t.QPs),
		"--transport", t.Transport, "--json", "--timeout", t.Timeout.String()}
	if t.MTU > 0 {
		args = append(args, "--mtu", strconv.Itoa(t.MTU))
	}
	if t.Depth > 0 {
		args = append(args, "--depth", strconv.Itoa(t.Depth))
	}
	if t.Rate != "" {
		args = append(args, "--rate", t.Rate)
	}
	if t.BDP > 0 {
		args = append(args, "--bdp", strconv.Itoa(t.BDP))
	}
	if t.Poll != "" {
		args = append(args, "--poll", t.Poll)
	}
	args = append(args, t.ccArgs()...)
	cctx, cancel := context.WithTimeout(ctx, t.Timeout+30*time.Second)
	defer cancel()
	cli := exec.CommandContext(cctx, "ip", args...)
	cliLog, err := os.Create(log)
	if err != nil {
		return nil, fmt.Errorf("roceperf log: %w", err)
	}
	defer cliLog.Close()
	fmt.Fprintf(cliLog, "# ip %s\n", strings.Join(args, " "))
	var stdout bytes.Buffer
	cli.Stdout, cli.Stderr = &stdout, cliLog
	cli.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On cancellation (Ctrl-C) ask roceperf to stop, so it detaches its
	// XDP program itself; kill it if it has not within stopGrace.
	cli.Cancel = func() error { return cli.Process.Signal(syscall.SIGTERM) }
	cli.WaitDelay = stopGrace
	cerr := cli.Run()
	res := &PerfResult{}
	raw := lastJSON(stdout.Bytes())
	if raw != nil {
		res.ClientRaw = raw
		if err := json.Unmarshal(raw, &res.Client); err != nil {
			return nil, fmt.Errorf("roceperf %s summary: %w\n%s", t.Op, err, raw)
		}
	}
	if cerr != nil {
		return res, fmt.Errorf("%w: roceperf %s %s → %s: %v; its log %s:\n%s", ErrPerf, t.Op, t.From, t.To, cerr, cliLog.Name(), tail(cliLog.Name(), 20))
	}
	if raw == nil {
		return res, fmt.Errorf("%w: roceperf %s printed no JSON summary:\n%s", ErrPerf, t.Op, stdout.String())
	}
	return res, nil
}

// serverLine is the line of a round's server output (one JSON object
// per client) whose client came from address addr.
func serverLine(out []byte, addr string) json.RawMessage {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Client string `json:"client"`
		}
		l := bytes.TrimSpace(sc.Bytes())
		if json.Unmarshal(l, &line) == nil && strings.HasPrefix(line.Client, addr+":") {
			return append(json.RawMessage(nil), l...)
		}
	}
	return nil
}

// mergeRound reads the transfers of one round as one, what one client
// with all their QPs would have reported: messages, bytes, the
// recovery's and the packets' counters added up, goodput the verified
// bytes of all over the span from the first start to the last end (so
// a sender that started late or finished early counts as it did), and
// each FCT percentile the largest of the clients'. nil when no client
// reported.
func mergeRound(flows []*PerfResult) *PerfResult {
	var m Summary
	n := 0
	for _, f := range flows {
		if f == nil {
			continue
		}
		c := f.Client
		if n++; n == 1 {
			m.Transport, m.Op, m.Size = c.Transport, c.Op, c.Size
		}
		m.Count, m.QPs, m.Messages, m.Bytes = m.Count+c.Count, m.QPs+c.QPs, m.Messages+c.Messages, m.Bytes+c.Bytes
		m.RetxPackets, m.Timeouts = m.RetxPackets+c.RetxPackets, m.Timeouts+c.Timeouts
		m.NaksReceived, m.NaksSent = m.NaksReceived+c.NaksReceived, m.NaksSent+c.NaksSent
		m.PacketsSent, m.PacketsReceived = m.PacketsSent+c.PacketsSent, m.PacketsReceived+c.PacketsReceived
		m.VerifiedBytes, m.Corrupt = m.VerifiedBytes+c.VerifiedBytes, m.Corrupt+c.Corrupt
		if !c.Start.IsZero() && (m.Start.IsZero() || c.Start.Before(m.Start)) {
			m.Start = c.Start
		}
		if c.End.After(m.End) {
			m.End = c.End
		}
		m.FCT = FCT{P50: max(m.FCT.P50, c.FCT.P50), P99: max(m.FCT.P99, c.FCT.P99), P999: max(m.FCT.P999, c.FCT.P999),
			P9999: max(m.FCT.P9999, c.FCT.P9999), Mean: max(m.FCT.Mean, c.FCT.Mean), Max: max(m.FCT.Max, c.FCT.Max)}
	}
	if n == 0 {
		return nil
	}
	if !m.Start.IsZero() && m.End.After(m.Start) {
		m.DurationS = m.End.Sub(m.Start).Seconds()
		m.GoodputGbps = float64(m.VerifiedBytes) * 8 / m.DurationS / 1e9
	}
	raw, _ := json.Marshal(m)
	return &PerfResult{Client: m, ClientRaw: raw}
}

// ccArgs are roceperf's congestion-control flags for the transfer, the
// --dcqcn- ones in name order.
func (t Transfer) ccArgs() []string {
	var args []string
	if t.CC != "" {
		args = append(args, "--cc", t.CC)
	}
	if t.LineRate != "" {
		args = append(args, "--line-rate", t.LineRate)
	}
	for _, k := range slices.Sorted(maps.Keys(t.DCQCN)) {
		args = append(args, "--dcqcn-"+k+"="+t.DCQCN[k])
	}
	return args
}

// lastJSON returns the last line of out that is a JSON object, or the
// whole output if it is one (an indented summary).
func lastJSON(out []byte) json.RawMessage {
	if t := bytes.TrimSpace(out); json.Valid(t) && len(t) > 0 && t[0] == '{' {
		return json.RawMessage(t)
	}
	var last json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 && l[0] == '{' && json.Valid(l) {
			last = append(json.RawMessage(nil), l...)
		}
	}
	return last
}

// waitListening polls until process pid's namespace has a TCP socket
// listening on port (or a UDP socket bound to it), the process exits, or
// timeout passes. It reads /proc/PID/net, the process's own view, so it
// needs no tool and makes no connection the server would count as its
// one client.
func waitListening(ctx context.Context, pid, port int, exited chan error, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("exited before listening: %v", err)
		default:
		}
		if listening(pid, port) {
			return nil
		}
	}
	return fmt.Errorf("not listening on port %d within %v", port, timeout)
}

// listening reads /proc/PID/net/{tcp,tcp6,udp,udp6} for a socket bound
// to port: TCP in state LISTEN (0A), UDP in any state.
func listening(pid, port int) bool {
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"tcp", "tcp6", "udp", "udp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || !strings.HasSuffix(fields[1], hexPort) {
				continue
			}
			if strings.HasPrefix(f, "udp") || fields[3] == "0A" {
				return true
			}
		}
	}
	return false
}
