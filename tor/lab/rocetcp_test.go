package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// sharedLink is a fake of the bottleneck RoCE and TCP share: RoCE gets
// 0.4 Gbit/s alone; beside TCP, 0.38 with QoS and 0.1 with 300
// retransmissions without (TCP filling the shared queue), and with
// NetRT no retransmission only when QoS keeps its frames. TCP gets 0.9
// alone and 0.55 beside RoCE. Ping answers in 200 µs, 2 ms beside TCP.
// Which flows share a run it learns from the run's place in the
// experiment's order (each run sits between two scrapes), not from
// timing: with both, RoCE waits for TCP to start and TCP for RoCE to
// end, so a starved test process sees the same overlap (timed with
// sleeps, it did not: RoCE ended after TCP on a loaded machine).
type sharedLink struct {
	fab   *fakeFabric
	mixes []string // the experiment's mixes, in the order it runs them
	mu    sync.Mutex
	ts    []Transfer
	runs  map[int]*fakeRun
}

// fakeRun is one run's rendezvous of its RoCE and TCP flows.
type fakeRun struct{ tcpUp, roceDone chan struct{} }

// run returns the run under way and its mix.
func (l *sharedLink) run() (*fakeRun, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := (l.fab.scrapes - 1) / 2
	r := l.runs[k]
	if r == nil {
		r = &fakeRun{make(chan struct{}), make(chan struct{})}
		l.runs[k] = r
	}
	return r, l.mixes[k%len(l.mixes)]
}

func (l *sharedLink) Transfer(ctx context.Context, t Transfer) (*PerfResult, error) {
	r, mix := l.run()
	if mix == mixBoth {
		select {
		case <-r.tcpUp:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer close(r.roceDone)
	}
	l.mu.Lock()
	l.ts = append(l.ts, t)
	l.mu.Unlock()
	o := l.fab.plan.Options
	s := Summary{Transport: t.Transport, Op: t.Op, Messages: int64(t.Count), GoodputGbps: 0.4, Start: time.Now()}
	if mix == mixBoth { // TCP is running: it waits for RoCE to end
		s.GoodputGbps = 0.38
		if !o.QoS {
			s.GoodputGbps, s.RetxPackets, s.Timeouts = 0.1, 300, 3
		}
	}
	if !o.NetRT && o.Loss > 0 {
		s.RetxPackets += 50
	}
	s.End = time.Now()
	return &PerfResult{Client: s}, nil
}

func (l *sharedLink) Round(ctx context.Context, ts []Transfer) ([]*PerfResult, error) {
	return roundOf(ctx, l.Transfer, ts)
}

func (l *sharedLink) TCP(ctx context.Context, f TCPFlow) (*TCPResult, error) {
	r, mix := l.run()
	start := time.Now()
	if mix == mixBoth {
		close(r.tcpUp)
		select {
		case <-r.roceDone:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &TCPResult{Gbps: 0.9, Retransmits: 7, Start: start, End: time.Now()}, nil
}

func (l *sharedLink) Ping(ctx context.Context, from, to string, iv time.Duration) (*PingResult, error) {
	rtt := 200.0
	if _, mix := l.run(); mix != mixRoCE {
		rtt = 2000
	}
	<-ctx.Done()
	return &PingResult{Sent: 3, RTTus: []float64{rtt, rtt, rtt}}, nil
}

// TestRoCETCPWithFakes runs roce-tcp's every cell on a fake shared link
// and checks what the cells make of the runs: the spread over runs, the
// shares beside the other flow against the same setting alone, and
// issue 28's two checks met where the fake meets them and not where it
// does not.
func TestRoCETCPWithFakes(t *testing.T) {
	exp := newRoCETCP()
	// --tcp-time 1s and --lead 0: the fake's TCP overlaps its RoCE.
	parseExperiment(t, exp, "--runs", "2", "--tcp-time", "1s", "--lead", "0s", "--ping-interval", "10ms")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if o.Topology != "multipath" || o.Paths != 1 || o.Senders != 2 || o.Receivers != 2 || o.Loss != 0.01 || o.QoS || o.NetRT ||
		o.Rate != "200M" || o.Poll != "interrupt" {
		t.Fatalf("Setup() = %+v, want the chain with two hosts a side, 1 %% loss, QoS and NetRT off first", o)
	}
	fab := newFakeFabric(t)
	o.Prefix = "rtb-multipath-"
	fab.plan = mustPlan(t, "multipath", func(p *Options) { *p = o })
	link := &sharedLink{fab: fab, mixes: exp.mixList, runs: map[int]*fakeRun{}}
	var out bytes.Buffer
	res := newResults(exp, fab.plan, "testbed run roce-tcp")
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: link, Apps: link, Out: &out}, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 24 || len(fab.reconfigs) != 4 {
		t.Fatalf("%d runs, %d reconfigurations; want 2 × 12 and one per (qos, netrt)", len(res.Runs), len(fab.reconfigs))
	}
	for _, tr := range link.ts {
		if tr.From != "h1" || tr.To != "h3" || tr.Rate != "80M" || tr.RTO != dcqcnRTO || tr.Poll != "interrupt" {
			t.Errorf("RoCE transfer %+v: want h1 → h3 at 80M, RTO %v, sleeping when idle", tr, dcqcnRTO)
		}
	}
	cells := res.Cells.([]RoCETCPCell)
	if len(cells) != 12 {
		t.Fatalf("%d cells, want 12", len(cells))
	}
	byKey := map[string]RoCETCPCell{}
	for _, c := range cells {
		byKey[onOffName(c.QoS)+"/"+onOffName(c.NetRT)+"/"+c.Mix] = c
		if c.Runs != 2 || len(c.Errors) != 0 {
			t.Errorf("cell %v/%v/%s: %d runs, errors %v", c.QoS, c.NetRT, c.Mix, c.Runs, c.Errors)
		}
	}
	on := byKey["on/on/both"]
	if on.RoCEGoodput.N != 2 || on.RoCEGoodput.Mean != 0.38 || on.RoCEGoodput.SD != 0 || on.TCPGbps.Mean != 0.9 {
		t.Errorf("qos on, netrt on, both: %+v", on)
	}
	if k := on.RoCEKept; k == nil || *k < 0.949 || *k > 0.951 {
		t.Errorf("RoCE kept %v beside TCP with QoS, want 0.95", k)
	}
	if on.PingP50.Mean != 2000 || byKey["on/on/roce"].PingP99.Mean != 200 {
		t.Errorf("ping p50 beside TCP %v, alone with RoCE %v; want 2000 and 200", on.PingP50.Mean, byKey["on/on/roce"].PingP99.Mean)
	}
	want := map[string][]string{
		"on/on/both":  {"RoCE keeps ≥ 90 % of its goodput alone: met", "no end-to-end retransmission with NetRT: met"},
		"on/on/roce":  {"no end-to-end retransmission with NetRT: met"},
		"on/off/both": {"RoCE keeps ≥ 90 % of its goodput alone: met"},
		"on/off/tcp":  nil,
		"off/on/both": nil, // no claim without QoS
	}
	for k, w := range want {
		got := byKey[k].Checks
		if len(got) != len(w) {
			t.Errorf("cell %s: checks %q, want %q", k, got, w)
			continue
		}
		for i := range w {
			if !strings.HasPrefix(got[i], w[i]) {
				t.Errorf("cell %s: check %q, want %q…", k, got[i], w[i])
			}
		}
	}
	if k := byKey["off/on/both"].RoCEKept; k == nil || *k > 0.3 {
		t.Errorf("without QoS RoCE kept %v, want the fake's 0.25", k)
	}
	if byKey["on/on/roce"].RoCEKept != nil || byKey["on/on/roce"].TCPGbps.N != 0 {
		t.Errorf("RoCE alone: a share or a TCP figure")
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("results do not encode: %v", err)
	}
	if byKey["off/off/both"].LossyDrops.N != 0 || byKey["on/off/both"].LossyDrops.N != 2 {
		t.Errorf("lossy queue drops without QoS (no such queue) %+v, with %+v", byKey["off/off/both"].LossyDrops, byKey["on/off/both"].LossyDrops)
	}
	files, err := WritePlots(t.TempDir(), exp.Plots(), GroupRuns(res.Runs))
	if err != nil || len(files) != 3 {
		t.Errorf("plots %v: %v; want 3", files, err)
	}
	if !strings.Contains(out.String(), "RoCE keeps ≥ 90 % of its goodput alone: met") || len(res.Table.Rows) != 12 {
		t.Errorf("progress:\n%s\ntable rows %d", out.String(), len(res.Table.Rows))
	}
}

func TestSpread(t *testing.T) {
	s := spreadOf([]float64{1, 3, math.NaN()})
	if s.N != 2 || s.Mean != 2 || s.Min != 1 || s.Max != 3 || s.SD < 1.414 || s.SD > 1.415 {
		t.Errorf("spread %+v", s)
	}
	if got := s.format(1); got != "2.0 ± 1.4 (1.0–3.0)" {
		t.Errorf("format %q", got)
	}
	if got := spreadOf(nil).String(); got != "–" {
		t.Errorf("empty spread %q", got)
	}
}

// TestRoCETCPTime: with both flows TCP outlasts RoCE's longest run alone
// in the same cell by half, after the lead; alone, and before any RoCE
// run, it runs --tcp-time.
func TestRoCETCPTime(t *testing.T) {
	e := newRoCETCP()
	e.alone = map[[2]bool]time.Duration{{true, true}: 6200 * time.Millisecond}
	for _, c := range []struct {
		qos, netrt bool
		mix        string
		want       time.Duration
	}{
		{true, true, mixBoth, 11 * time.Second}, // 1 s lead + 9 s + 1 s
		{true, true, mixTCP, e.tcpTime},
		{false, true, mixBoth, e.tcpTime},
	} {
		if got := e.tcpFor(c.qos, c.netrt, c.mix); got != c.want {
			t.Errorf("tcpFor(%v, %v, %s) = %v, want %v", c.qos, c.netrt, c.mix, got, c.want)
		}
	}
}
