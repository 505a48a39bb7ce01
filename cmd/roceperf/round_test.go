package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"rocetor/nic/perf"
	"strings"
	"sync"
	"testing"
	"time"
)

// serverLines decodes the JSON lines serve printed among its log lines.
func serverLines(t *testing.T, log string) []perf.ServerReport {
	t.Helper()
	var out []perf.ServerReport
	for _, l := range strings.Split(log, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var r perf.ServerReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad server line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// waitLines waits until serve has printed n report lines and returns
// them: a client has its result just before the server reports the run.
func waitLines(t *testing.T, log *syncWriter, n int) []perf.ServerReport {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if lines := serverLines(t, log.String()); len(lines) >= n || time.Now().After(deadline) {
			if len(lines) < n {
				t.Fatalf("the server reported %d runs, want %d:\n%s", len(lines), n, log.String())
			}
			return lines
		}
	}
}

// TestManyClients: serve --clients 3 runs three clients at once on one
// endpoint — a WRITE, a SEND and a READ, each with its own QPs and
// region — verifies each, and says so in one line per client.
func TestManyClients(t *testing.T) {
	n := perf.NewFakeNet()
	addr, code, log := fakeServer(t, n, perf.ServerOptions{Clients: 3, Once: true})
	type res struct {
		op        string
		code      int
		out, errs string
	}
	results := make(chan res, 3)
	for _, c := range []struct{ op, qps string }{{"write", "2"}, {"send", "3"}, {"read", "1"}} {
		go func() {
			code, out, errs := fakeClient(t, n, c.op, "--dev", "f", "--to", addr, "-s", "4096", "-n", "300", "-q", c.qps, "--json")
			results <- res{c.op, code, out, errs}
		}()
	}
	for range 3 {
		r := <-results
		if r.code != exitOK {
			t.Fatalf("%s: exit %d: %s%s\nserver: %s", r.op, r.code, r.out, r.errs, log.String())
		}
		rep := decode(t, r.out)
		if rep.Messages != 300 || rep.Corrupt != 0 || rep.VerifiedBytes != 300*4096 || rep.Server == nil {
			t.Errorf("%s: %s", r.op, r.out)
		}
	}
	if sc := <-code; sc != exitOK {
		t.Errorf("serve --once --clients 3 exit %d: %s", sc, log.String())
	}
	lines := waitLines(t, log, 3)
	if len(lines) != 3 {
		t.Fatalf("%d report lines, want 3:\n%s", len(lines), log.String())
	}
	qps := 0
	for _, l := range lines {
		qps += l.QPs
		if l.Round != 1 || l.Clients != 3 || l.Error != "" || l.ClientMessages != 300 {
			t.Errorf("server line %+v", l)
		}
	}
	if qps != 6 {
		t.Errorf("the round's clients had %d QPs, want 6", qps)
	}
}

// TestRoundRefusesMismatch: a client that asks for another transport
// than the round's is refused with the reason; the round goes on with
// the others.
func TestRoundRefusesMismatch(t *testing.T) {
	n := perf.NewFakeNet()
	addr, _, log := fakeServer(t, n, perf.ServerOptions{Clients: 2, Timeout: 2 * time.Second})
	var wg sync.WaitGroup
	var okCode int
	var okOut string
	wg.Add(1)
	go func() {
		defer wg.Done()
		okCode, okOut, _ = fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "1KiB", "-n", "50", "--json")
	}()
	// The first client is in once the server has logged nothing yet
	// but accepted: give it a moment, then send the odd one.
	time.Sleep(100 * time.Millisecond)
	code, _, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "1KiB", "-n", "50", "--transport", "irn")
	if code != exitFailure || !strings.Contains(errs, "this round runs transport gbn") {
		t.Errorf("odd client: exit %d, %q", code, errs)
	}
	wg.Wait()
	if okCode != exitOK || decode(t, okOut).Corrupt != 0 {
		t.Errorf("first client: exit %d, %s\nserver: %s", okCode, okOut, log.String())
	}
}

// TestRoundKeepsEarlyClientAlive: a client done early waits for the
// round's slowest past its own --timeout, kept alive by progress lines.
func TestRoundKeepsEarlyClientAlive(t *testing.T) {
	n := perf.NewFakeNet()
	addr, _, log := fakeServer(t, n, perf.ServerOptions{Clients: 2, Timeout: 5 * time.Second})
	// The slow one: a bare hello, then done after 1.5 s, longer than
	// the fast client's --timeout of 400 ms.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	// A hello as docs/roceperf.md spells it: one QP, one 8-byte WRITE.
	fmt.Fprintln(slow, `{"type":"hello","version":3,"op":"write","transport":"gbn","qps":1,"size":8,"count":1,"mtu":1024,`+
		`"depth":1,"rto_us":0,"timeout_ms":5000,"qp":[{"qpn":256,"psn":1,"ip":"192.0.2.2","mac":"02:00:00:00:00:02"}],`+
		`"mr":{"rkey":256,"va":1099511627776,"len":8}}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(slow)
		slow.SetReadDeadline(time.Now().Add(10 * time.Second))
		if l, err := r.ReadString('\n'); err != nil || !strings.Contains(l, `"accept"`) {
			t.Errorf("slow client: %q, %v", l, err)
			return
		}
		time.Sleep(1500 * time.Millisecond)
		fmt.Fprintf(slow, `{"type":"done","messages":0,"error":"held back by the test"}`+"\n")
		io.Copy(io.Discard, r)
	}()
	start := time.Now()
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "1KiB", "-n", "20", "--timeout", "400ms", "--json")
	if code != exitOK || decode(t, out).Corrupt != 0 {
		t.Fatalf("fast client: exit %d: %s%s\nserver: %s", code, out, errs, log.String())
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the fast client had its result after %v, before the round ended", d)
	}
	slow.Close()
	<-done
}

// TestMetrics: serve --metrics counts runs, verified bytes and the
// endpoint's packets over the rounds, in tord's naming.
func TestMetrics(t *testing.T) {
	n := perf.NewFakeNet()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logw := &syncWriter{w: &bytes.Buffer{}}
	sv := perf.NewServer(perf.ServerOptions{Timeout: 5 * time.Second, MaxMR: 64 << 20}, n.Device(), logw, logw)
	maddr, stopHTTP, err := sv.ServeMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stopHTTP()
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sv.Serve(ctx, ln)
	}()
	defer func() {
		cancel()
		<-finished
	}()
	for range 2 {
		if code, out, errs := fakeClient(t, n, "send", "--dev", "f", "--to", ln.Addr().String(), "-s", "1KiB", "-n", "100", "-q", "2"); code != exitOK {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
	}
	waitLines(t, logw, 2)
	resp, err := http.Get("http://" + maddr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`rocetor_roceperf_runs_total{result="ok"} 2`, `rocetor_roceperf_runs_total{result="failed"} 0`,
		"rocetor_roceperf_verified_bytes_total 204800", "rocetor_roceperf_packets_received_total 200",
		"rocetor_roceperf_qps 0", "rocetor_roceperf_retransmitted_packets_total 0", "rocetor_roceperf_timeouts_total 0",
		"rocetor_roceperf_cnps_sent_total 0", "rocetor_roceperf_cnps_received_total 0",
		"# HELP rocetor_roceperf_timeouts_total Retransmission timeouts",
	} {
		if !strings.Contains(string(body), want+"\n") && !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
