package netns

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

	"rocetor/tor/lab"
)

// roceperf runs the roceperf binary in the hosts' namespaces.
type roceperf struct {
	bin    string // the binary
	plan   *lab.Plan
	logDir string
	port   int // the server's control port
	seq    atomic.Int64
}

// roceperfPort is the server's control port (perftest's default).
const roceperfPort = 18515

// Transfer starts roceperf serve --once on the receiving host, waits
// until it listens, runs the client on the sending host and reads its
// JSON summary, then waits for the server to exit: a round of one.
func (r *roceperf) Transfer(ctx context.Context, t lab.Transfer) (*lab.PerfResult, error) {
	res, err := r.Round(ctx, []lab.Transfer{t})
	return res[0], err
}

// Round runs transfers into one receiving host at once: one roceperf
// serve --once --clients N there, which serves them as one round on one
// endpoint (docs/roceperf.md, "Many clients"), and a client per
// transfer on its sending host, all started together once the server
// listens. Each sending host runs one endpoint, so the transfers come
// from different hosts. The results are in the transfers' order, nil
// for a client that reported nothing; the errors are joined.
func (r *roceperf) Round(ctx context.Context, ts []lab.Transfer) ([]*lab.PerfResult, error) {
	out := make([]*lab.PerfResult, len(ts))
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
func (r *roceperf) client(ctx context.Context, t lab.Transfer, listen, log string) (*lab.PerfResult, error) {
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
	if t.RTO > 0 {
		args = append(args, "--rto", t.RTO.String())
	}
	if t.Poll != "" {
		args = append(args, "--poll", t.Poll)
	}
	args = append(args, ccArgs(t)...)
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
	res := &lab.PerfResult{}
	raw := lastJSON(stdout.Bytes())
	if raw != nil {
		res.ClientRaw = raw
		if err := json.Unmarshal(raw, &res.Client); err != nil {
			return nil, fmt.Errorf("roceperf %s summary: %w\n%s", t.Op, err, raw)
		}
	}
	if cerr != nil {
		return res, fmt.Errorf("%w: roceperf %s %s → %s: %v; its log %s:\n%s", lab.ErrPerf, t.Op, t.From, t.To, cerr, cliLog.Name(), tail(cliLog.Name(), 20))
	}
	if raw == nil {
		return res, fmt.Errorf("%w: roceperf %s printed no JSON summary:\n%s", lab.ErrPerf, t.Op, stdout.String())
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

// ccArgs are roceperf's congestion-control flags for the transfer, the
// --dcqcn- ones in name order.
func ccArgs(t lab.Transfer) []string {
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
