package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/tor/lab"
	"rocetor/tor/lab/netns"
	"rocetor/tor/lab/netns/netnstest"
	"rocetor/tor/pipeline"
)

// TestPrometheusE2E is the monitoring stack as an operator runs it:
// switches that serve /metrics on a management network, a real
// Prometheus in the host's namespace scraping them with the project's
// alerting rules loaded, RDMA WRITEs through the switches, and then
// Prometheus's HTTP API asked what the dashboard and the rules ask.
//
// Two testbeds between them run everything the dashboard has panels
// for. The chain: NetRT on the ToRs, 1% loss at core, adaptive
// multipath, Go-Back-N endpoints. The link: link-local retransmission
// on tor1 — tor2 with 0.1% corruption and 1% loss there that the impair
// rule turns into trimming, every switch trimming, DCP endpoints. (On one
// testbed llr would repair core's losses before NetRT saw them, and a
// trimming switch parses the DSCP tag bits as DCP's, which Go-Back-N's
// DSCP 26 sets.)
func TestPrometheusE2E(t *testing.T) {
	netnstest.RequireRoot(t)
	promBin := needTool(t, "prometheus")
	promtool := needTool(t, "promtool")
	start := time.Now()
	bin, haveRoceperf := netnstest.BuildBin(t)
	if !haveRoceperf {
		t.Fatal("cmd/roceperf does not build")
	}
	src, err := netns.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(src, "deploy", "prometheus", "rules.yml")
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rules, err, out)
	}

	// Management networks of their own, so that a testbed an engineer
	// has up with the default one does not collide with the test's.
	stateDir := t.TempDir()
	chain := upBed(t, stateDir, bin, "chain", "p", "198.19.77.0/24", "--netrt", "--loss", "0.01", "--multipath", "adaptive")
	// A second testbed may not take the first one's management network.
	refused := netnstest.Prefix("r")
	code, _, stderr := runCLI("up", "link", "--mgmt=198.19.77.0/24", "--prefix", refused, "--state", stateDir, "--bin", bin)
	if code != 2 || !strings.Contains(stderr, "overlaps") {
		t.Errorf("up with the chain's management network: exit %d, %s; want 2 and overlaps", code, stderr)
	}
	if left, _ := netns.ListNetns(refused); len(left) > 0 {
		t.Errorf("a refused up left namespaces %v", left)
		netns.Down(stateDir, refused, nil)
	}
	link := upBed(t, stateDir, bin, "link", "q", "198.19.76.0/24", "--llr", "blocking", "--trim", "--corrupt", "0.001", "--loss", "0.01")
	m := link.tb.Impairment()
	m.Trim = true // DCP data the loss picks is trimmed (dcp-loss's rule)
	if err := link.tb.SetImpairment(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	beds := []*bed{chain, link}

	prom := startPrometheus(t, promBin, promtool, beds, rules)
	prom.waitScrapes(t, time.Now())
	checkTargets(t, prom, beds)

	// NetRT repairs core's losses between the ToRs.
	d := phase(t, prom, chain, "gbn", [][2]string{{"tor1", "h1"}, {"core", "tor1"}, {"tor2", "core"}})
	for _, c := range []struct{ node, metric, match, what string }{
		{"core", "rocetor_impair_destroyed_total", `cause="loss"`, "frames lost on core's impaired port, with 1% loss there"},
		{"tor1", "rocetor_netrt_pool_admitted_total", "", "duplicates pooled at tor1"},
		{"tor2", "rocetor_netrt_gaps_total", "", "gaps seen at tor2"},
		{"tor2", "rocetor_netrt_requests_sent_total", "", "NetRT requests from tor2"},
		{"tor1", "rocetor_netrt_requests_received_total", "", "NetRT requests at tor1"},
		{"tor1", "rocetor_netrt_retransmitted_total", "", "retransmissions from tor1's pool"},
	} {
		if d.get(chain.instance(c.node), c.metric, c.match) == 0 {
			t.Errorf("chain: Prometheus saw no %s (%s{%s})", c.what, c.metric, c.match)
		}
	}

	// Link-local retransmission repairs the corruption between tor1 and
	// tor2; the impair rule trims the DCP data its loss picks.
	d = phase(t, prom, link, "dcp", [][2]string{{"tor1", "h1"}, {"tor2", "tor1"}})
	for _, c := range []struct{ node, metric, match, what string }{
		{"tor1", "rocetor_impair_destroyed_total", `cause="corrupt"`, "frames corrupted by tor1's impair rule"},
		{"tor1", "rocetor_impair_trimmed_total", `port="tor2"`, "DCP data trimmed by tor1's impair rule"},
		{"tor1", "rocetor_llr_protected_packets_total", `port="tor2"`, "packets protected toward tor2"},
		{"tor2", "rocetor_llr_losses_detected_total", `port="tor1"`, "losses detected by tor2"},
		{"tor1", "rocetor_llr_retransmitted_total", `port="tor2"`, "link-local retransmissions from tor1"},
		{"tor2", "rocetor_trim_ho_packets_total", "", "header-only packets through tor2"},
	} {
		if d.get(link.instance(c.node), c.metric, c.match) == 0 {
			t.Errorf("link: Prometheus saw no %s (%s{%s})", c.what, c.metric, c.match)
		}
	}
	t.Logf("link: tor1 retransmitted %v frames, skipped %v on ackNoTimeout (LLRAckTimeoutsRising, LLRResidualLoss)",
		d.get(link.instance("tor1"), "rocetor_llr_retransmitted_total", ""), d.get(link.instance("tor1"), "rocetor_llr_ack_timeouts_total", ""))

	checkUp(t, prom, beds)
	checkDropReasons(t, prom, beds)
	checkRules(t, prom, start)
	checkDashboard(t, prom, src, beds, time.Since(prom.started))

	prom.stop(t)
	checkDownBeds(t, stateDir, beds)
	t.Logf("TestPrometheusE2E took %v", time.Since(start).Round(100*time.Millisecond))
}

// upBed brings up a testbed of the test with the command, on a
// management network of its own, checks that network and what testbed
// status says of it, and gives it roceperf.
func upBed(t *testing.T, stateDir, bin, name, tag, mgmt string, args ...string) *bed {
	t.Helper()
	prefix := netnstest.Prefix(tag)
	netnstest.Cleanup(t, stateDir, prefix)
	args = append(append([]string{"up", name, "--mgmt=" + mgmt}, args...), "--prefix", prefix, "--state", stateDir, "--bin", bin)
	if code, out, stderr := runCLI(args...); code != 0 {
		t.Fatalf("testbed %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	tb, err := netns.Open(stateDir, prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkMgmtNetwork(t, tb)
	code, out, stderr := runCLI("status", "--state", stateDir, "--prefix", prefix)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	for _, m := range tb.Plan().Mgmt {
		for _, want := range []string{"management network " + mgmt,
			fmt.Sprintf("mgmt: %s %s (host) — mgmt %s (switch)", m.HostIface, m.HostAddr, m.Addr),
			fmt.Sprintf("metrics: curl -s http://%s:9478/metrics", m.Addr.Addr())} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
	}
	env, err := tb.Env(context.Background(), bin, "")
	if err != nil {
		t.Fatal(err)
	}
	return &bed{name: name, prefix: prefix, tb: tb, env: env}
}

// phase runs WRITEs through a testbed of the test, waits for Prometheus
// to scrape, and checks that it saw what the testbed's own scrapes saw
// and the packets forwarded along hops; it returns what Prometheus saw
// move meanwhile.
func phase(t *testing.T, prom *prometheus, b *bed, transport string, hops [][2]string) promDelta {
	const size, count = 65536, 200
	t.Helper()
	before := time.Now()
	w := lab.Transfer{Op: "write", From: "h1", To: "h2", Size: size, Count: count, QPs: 1, Transport: transport, MTU: 1024,
		Rate: b.tb.Plan().Options.Rate, Timeout: 30 * time.Second}
	run := b.env.Measure(context.Background(), map[string]string{"testbed": b.name}, 1, w)
	if run.Error != "" || run.Perf == nil {
		t.Fatalf("%s: roceperf: %s", b.name, run.Error)
	}
	s := run.Perf.Client
	if s.Messages != count || s.Corrupt != 0 || s.VerifiedBytes != size*count {
		t.Errorf("%s: %d messages, %d corrupt, %d bytes verified; want %d, 0, %d", b.name, s.Messages, s.Corrupt, s.VerifiedBytes,
			count, size*count)
	}
	t.Logf("%s: roceperf %s sent %d packets, %d retransmitted, %d timeouts, goodput %.3f Gbit/s in %.2f s", b.name, transport,
		s.PacketsSent, s.RetxPackets, s.Timeouts, s.GoodputGbps, s.DurationS)
	prom.waitScrapes(t, time.Now())
	d := prom.delta(t, before, time.Now())
	d.checkCovers(t, b, run)
	d.checkForwarded(t, b, s.PacketsSent, hops)
	return d
}

// bed is one testbed of the test.
type bed struct {
	name   string // chain, link: the instance labels' prefix
	prefix string
	tb     *netns.Testbed
	env    *lab.Env
}

// instance is a switch's instance label: chain-tor1.
func (b *bed) instance(node string) string { return b.name + "-" + node }

// needTool skips the test when a tool is missing, and says which package
// brings it.
func needTool(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("needs %s (Debian: apt-get install prometheus)", tool)
	}
	return p
}

// checkMgmtNetwork holds the management network to its promises: tord
// serves metrics on the switch's management address and keeps admin on
// loopback, no XDP program on the management interface (and one on every
// port), and no route through it on either side but its own /30.
func checkMgmtNetwork(t *testing.T, tb *netns.Testbed) {
	t.Helper()
	p := tb.Plan()
	if len(p.Mgmt) != len(p.Switches()) {
		t.Fatalf("%d management links for %d switches", len(p.Mgmt), len(p.Switches()))
	}
	ipJSON := func(args ...string) []map[string]any {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"-j"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip -j %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		var v []map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("ip -j %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return v
	}
	onlyConnected := func(where string, routes []map[string]any, want string) {
		t.Helper()
		if len(routes) != 1 || routes[0]["dst"] != want {
			t.Errorf("%s: routes %v, want only the connected %s", where, routes, want)
		}
	}
	for _, m := range p.Mgmt {
		ns := p.Node(m.Node).Netns
		sw := tb.State().Switches[m.Node]
		cfg, err := pipeline.LoadConfig(sw.Config)
		if err != nil {
			t.Fatal(err)
		}
		if want := net.JoinHostPort(m.Addr.Addr().String(), "9478"); cfg.MetricsAddr != want || !strings.HasPrefix(cfg.AdminAddr, "127.0.0.1:") {
			t.Errorf("%s: metrics_addr %s, admin_addr %s; want %s and loopback", m.Node, cfg.MetricsAddr, cfg.AdminAddr, want)
		}
		if slices.Contains(cfg.Ports, m.Iface) {
			t.Errorf("%s: the management interface is one of tord's ports %v", m.Node, cfg.Ports)
		}
		for _, l := range ipJSON("-n", ns, "-d", "link", "show") {
			name, _ := l["ifname"].(string)
			_, xdp := l["xdp"]
			switch {
			case name == m.Iface && xdp:
				t.Errorf("%s: an XDP program is attached to the management interface: %v", m.Node, l["xdp"])
			case slices.Contains(cfg.Ports, name) && !xdp:
				t.Errorf("%s: port %s has no XDP program (the check above would prove nothing)", m.Node, name)
			}
		}
		subnet := m.Addr.Masked().String()
		onlyConnected(m.Node+" "+m.Iface, ipJSON("-n", ns, "-4", "route", "show", "table", "main", "dev", m.Iface), subnet)
		onlyConnected("host "+m.HostIface, ipJSON("-4", "route", "show", "table", "main", "dev", m.HostIface), subnet)
		for _, where := range [][]string{{"-n", ns, "-6", "route", "show", "dev", m.Iface}, {"-6", "route", "show", "dev", m.HostIface}} {
			if r := ipJSON(where...); len(r) > 0 {
				t.Errorf("ip %s: IPv6 routes %v, want none", strings.Join(where, " "), r)
			}
		}
	}
}

// prometheus is a Prometheus server the test runs.
type prometheus struct {
	base     string // http://127.0.0.1:PORT
	client   *http.Client
	started  time.Time
	interval time.Duration
	log      string
	stop     func(t *testing.T)
}

// startPrometheus writes a configuration that scrapes every switch of the
// testbeds on its management address as job tord, with the project's
// alerting rules, checks it with promtool, starts Prometheus on a free
// loopback port and waits until it is ready. It is stopped in t.Cleanup,
// which runs before cleanupPrefix's (registered earlier), so it never
// scrapes addresses whose namespaces are gone; a crashed test takes it
// down with it (Pdeathsig).
func startPrometheus(t *testing.T, promBin, promtool string, beds []*bed, rules string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	cfgPath, switches := writePromConfig(t, dir, promtool, beds, rules)
	const interval = time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the thread that started the process exits,
	// not the process: Go ends the threads of goroutines that exit
	// locked (inNetns's do), and the test's thread may become one. So
	// start it from a goroutine locked to its thread until it exits.
	started, done := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
		logf.Close()
	}()
	if err := <-started; err != nil {
		logf.Close()
		t.Fatal(err)
	}
	var once sync.Once
	p := &prometheus{base: "http://" + addr, client: &http.Client{Timeout: 10 * time.Second}, started: time.Now(),
		interval: interval, log: logPath}
	p.stop = func(t *testing.T) {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("prometheus log %s:\n%s", logPath, logTail(logPath))
			}
		})
	}
	t.Cleanup(func() { p.stop(t) })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("prometheus exited before it was ready: %v\n%s", err, logTail(logPath))
		default:
		}
		if resp, err := p.client.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 30s:\n%s", logTail(logPath))
		}
	}
	t.Logf("prometheus %s ready in %v, scraping %d switches", addr, time.Since(p.started).Round(time.Millisecond), switches)
	return p
}

// checkDownBeds takes the test's testbeds down with the command and
// checks that nothing of them stays: namespaces, management interfaces,
// routes into the management networks.
func checkDownBeds(t *testing.T, stateDir string, beds []*bed) {
	for _, b := range beds {
		if code, out, stderr := runCLI("down", "--prefix", b.prefix, "--state", stateDir); code != 0 {
			t.Fatalf("testbed down: exit %d\n%s%s", code, out, stderr)
		}
		if left, _ := netns.ListNetns(b.prefix); len(left) > 0 {
			t.Errorf("namespaces left by testbed down: %v", left)
		}
		for _, m := range b.tb.Plan().Mgmt {
			if _, err := net.InterfaceByName(m.HostIface); err == nil {
				t.Errorf("management interface %s left in the host's namespace by testbed down", m.HostIface)
			}
		}
		mgmt := b.tb.Plan().Options.Mgmt
		if out, _ := exec.Command("ip", "-4", "route", "show", "root", mgmt).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
			t.Errorf("routes into %s left by testbed down:\n%s", mgmt, out)
		}
	}
}

// writePromConfig writes a Prometheus configuration that scrapes every
// switch of the beds each second, named as deploy/prometheus relabels
// them, with the rules loaded, checks it with promtool and returns its
// path and the number of switches it scrapes.
func writePromConfig(t *testing.T, dir, promtool string, beds []*bed, rules string) (string, int) {
	type staticConfig struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	}
	var targets []staticConfig
	for _, b := range beds {
		for _, n := range b.tb.Plan().Switches() {
			u, err := url.Parse(b.tb.State().Switches[n.Name].MetricsURL)
			if err != nil {
				t.Fatal(err)
			}
			// A name rather than the address, as deploy/prometheus/prometheus.yml
			// relabels it: instance="chain-tor1".
			targets = append(targets, staticConfig{Targets: []string{u.Host}, Labels: map[string]string{"instance": b.instance(n.Name), "role": n.Role}})
		}
	}
	cfg := map[string]any{
		"global":     map[string]string{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
		"rule_files": []string{rules},
		"scrape_configs": []any{map[string]any{
			"job_name": "tord", "metrics_path": "/metrics", "static_configs": targets,
		}},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config:\n%s\n%v\n%s", b, err, out)
	}
	return cfgPath, len(targets)
}

// get calls a Prometheus API endpoint and decodes its data.
func (p *prometheus) get(t *testing.T, path string, q url.Values, data any) error {
	t.Helper()
	resp, err := p.client.Get(p.base + path + "?" + q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s %v: %s: %s", path, q, r.ErrorType, r.Error)
	}
	if len(r.Warnings) > 0 {
		return fmt.Errorf("GET %s %v: warnings %q", path, q, r.Warnings)
	}
	return json.Unmarshal(r.Data, data)
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query evaluates expr at time at (now if zero) and returns the
// vector's samples, or a scalar as one sample without labels.
func (p *prometheus) query(t *testing.T, expr string, at time.Time) ([]sample, error) {
	t.Helper()
	q := url.Values{"query": {expr}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(t, "/api/v1/query", q, &data); err != nil {
		return nil, err
	}
	value := func(v [2]any) float64 {
		s, _ := v[1].(string)
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	switch data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]sample, len(vec))
		for i, s := range vec {
			out[i] = sample{s.Metric, value(s.Value)}
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		return []sample{{nil, value(v)}}, nil
	}
	return nil, fmt.Errorf("query %s: result type %s", expr, data.ResultType)
}

func (p *prometheus) mustQuery(t *testing.T, expr string, at time.Time) []sample {
	t.Helper()
	s, err := p.query(t, expr, at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// promTarget is one active target of /api/v1/targets.
type promTarget struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	LastScrape time.Time         `json:"lastScrape"`
}

func (p *prometheus) targets(t *testing.T) []promTarget {
	t.Helper()
	var data struct {
		Active []promTarget `json:"activeTargets"`
	}
	if err := p.get(t, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		t.Fatal(err)
	}
	return data.Active
}

// waitScrapes waits until every target has been scraped successfully
// twice since after: its last scrape began more than one interval after
// it, so one scrape began after it and another since.
func (p *prometheus) waitScrapes(t *testing.T, after time.Time) {
	t.Helper()
	deadline := time.Now().Add(15 * p.interval)
	for {
		ok := true
		ts := p.targets(t)
		for _, tg := range ts {
			if tg.Health != "up" || !tg.LastScrape.After(after.Add(p.interval)) {
				ok = false
			}
		}
		if ok && len(ts) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets not scraped twice since %s: %+v", after.Format(time.StampMilli), ts)
		}
		time.Sleep(p.interval / 4)
	}
}

// checkTargets: Prometheus scrapes every switch, on its management
// address, as job tord.
func checkTargets(t *testing.T, p *prometheus, beds []*bed) {
	t.Helper()
	got := map[string]string{}
	for _, tg := range p.targets(t) {
		if tg.Labels["job"] != "tord" || tg.Health != "up" {
			t.Errorf("target %+v: want job tord, up", tg)
		}
		got[tg.Labels["instance"]] = tg.ScrapeURL
	}
	n := 0
	for _, b := range beds {
		for _, m := range b.tb.Plan().Mgmt {
			n++
			if want := fmt.Sprintf("http://%s:9478/metrics", m.Addr.Addr()); got[b.instance(m.Node)] != want {
				t.Errorf("target %s scraped at %q, want %s", b.instance(m.Node), got[b.instance(m.Node)], want)
			}
		}
	}
	if len(got) != n {
		t.Errorf("targets %v, want the %d switches", got, n)
	}
}

// promDelta is what every rocetor_ counter of every switch counted
// between two instants, as Prometheus has it: the values at the later
// minus the values at the earlier (a counter absent then counts from 0).
type promDelta map[string]map[string]float64 // instance → Sample key → delta

func (p *prometheus) delta(t *testing.T, from, to time.Time) promDelta {
	t.Helper()
	at := func(ts time.Time) map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for _, s := range p.mustQuery(t, `{job="tord", __name__=~"rocetor_.+_total"}`, ts) {
			inst := s.Metric["instance"]
			if out[inst] == nil {
				out[inst] = map[string]float64{}
			}
			out[inst][sampleKey(s.Metric)] = s.Value
		}
		return out
	}
	before, after := at(from), at(to)
	d := promDelta{}
	for inst, series := range after {
		d[inst] = map[string]float64{}
		for k, v := range series {
			d[inst][k] = v - before[inst][k]
		}
	}
	return d
}

// sampleKey is a Prometheus series as testbed's Sample keys it: the name
// and the target's own labels, sorted, without those the scrape adds.
func sampleKey(m map[string]string) string {
	var ls []string
	for k, v := range m {
		switch k {
		case "__name__", "job", "instance", "role":
			continue
		}
		ls = append(ls, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(ls)
	if len(ls) == 0 {
		return m["__name__"]
	}
	return m["__name__"] + "{" + strings.Join(ls, ",") + "}"
}

// get sums a metric's deltas on one switch over the series whose labels
// contain match.
func (d promDelta) get(instance, metric, match string) float64 {
	var sum float64
	for k, v := range d[instance] {
		name, labels, _ := strings.Cut(k, "{")
		if name == metric && strings.Contains(labels, match) {
			sum += v
		}
	}
	return sum
}

// checkCovers: every counter that testbed's own scrapes (just before and
// after the transfer, inside the switch's namespace) saw move, Prometheus
// saw move at least as much over the wider window around them.
func (d promDelta) checkCovers(t *testing.T, b *bed, run lab.Run) {
	t.Helper()
	phase := b.name
	n := 0
	for node, s := range run.Switches {
		node := b.instance(node)
		for k, v := range s {
			if !lab.IsCounter(k) || v <= 0 {
				continue
			}
			n++
			got, ok := d[node][k]
			if !ok {
				t.Errorf("%s: %s %s moved by %v in testbed's scrapes, and Prometheus has no such series", phase, node, k, v)
			} else if got < v {
				t.Errorf("%s: %s %s: Prometheus saw %v, testbed's scrapes within its window %v", phase, node, k, got, v)
			}
		}
	}
	if n < 50 {
		t.Errorf("%s: only %d counters moved during the transfer", phase, n)
	}
}

// checkForwarded: the WRITEs' packets crossed every switch on their way
// from h1 to h2 (hops: switch, the port they arrive on), less what the
// switches before dropped or their impaired ports destroyed.
func (d promDelta) checkForwarded(t *testing.T, b *bed, sent int64, hops [][2]string) {
	t.Helper()
	want := float64(sent)
	for _, hop := range hops {
		node := b.instance(hop[0])
		rx := d.get(node, "rocetor_port_rx_packets_total", fmt.Sprintf(`port="%s"`, hop[1]))
		if rx < want {
			t.Errorf("%s received %v packets from %s, want at least %v (roceperf sent %d)", node, rx, hop[1], want, sent)
		}
		// What the switch dropped, and what its impaired ports destroyed
		// on the wire beyond its counters.
		want -= d.get(node, "rocetor_drops_total", "") + d.get(node, "rocetor_impair_destroyed_total", `direction="egress"`)
	}
}

// checkUp: up{job="tord"} is 1 for every switch.
func checkUp(t *testing.T, p *prometheus, beds []*bed) {
	t.Helper()
	got := map[string]float64{}
	for _, s := range p.mustQuery(t, `up{job="tord"}`, time.Time{}) {
		got[s.Metric["instance"]] = s.Value
	}
	n := 0
	for _, b := range beds {
		for _, sw := range b.tb.Plan().Switches() {
			n++
			if got[b.instance(sw.Name)] != 1 {
				t.Errorf(`up{job="tord", instance=%q} = %v, want 1`, b.instance(sw.Name), got[b.instance(sw.Name)])
			}
		}
	}
	if len(got) != n {
		t.Errorf(`up{job="tord"}: %v, want the %d switches`, got, n)
	}
}

// checkDropReasons: every switch exports every drop reason it declares
// (as zero until it drops), and Prometheus has all of them.
func checkDropReasons(t *testing.T, p *prometheus, beds []*bed) {
	t.Helper()
	got := map[string][]string{}
	for _, s := range p.mustQuery(t, `rocetor_drops_total{job="tord"}`, time.Time{}) {
		got[s.Metric["instance"]] = append(got[s.Metric["instance"]], s.Metric["reason"])
	}
	ss := map[string]lab.Sample{}
	for _, b := range beds {
		scraped, err := b.tb.Scrape(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for node, s := range scraped {
			ss[b.instance(node)] = s
		}
	}
	for node, s := range ss {
		var want []string
		for r := range s.Drops() {
			want = append(want, r)
		}
		sort.Strings(want)
		sort.Strings(got[node])
		if !slices.Equal(got[node], want) {
			t.Errorf("%s: Prometheus has drop reasons %q, tord exports %q", node, got[node], want)
		}
		for _, r := range []string{"queue_full", "no_route", "no_neighbour", "no_frame", "tx_full"} {
			if !slices.Contains(want, r) {
				t.Errorf("%s exports no drop reason %s", node, r)
			}
		}
	}
}

// checkRules: Prometheus loaded every group of deploy/prometheus/rules.yml,
// evaluated every rule since the test began, and none failed.
func checkRules(t *testing.T, p *prometheus, start time.Time) {
	t.Helper()
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			File  string `json:"file"`
			Rules []struct {
				Name           string    `json:"name"`
				Query          string    `json:"query"`
				Health         string    `json:"health"`
				LastError      string    `json:"lastError"`
				State          string    `json:"state"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(t, "/api/v1/rules", url.Values{}, &data); err != nil {
		t.Fatal(err)
	}
	want := []string{"tord.availability", "tord.dataplane", "tord.ecn", "tord.llr", "tord.netrt", "tord.trim", "tord.trust"}
	var groups, exprs []string
	for _, g := range data.Groups {
		groups = append(groups, g.Name)
		for _, r := range g.Rules {
			exprs = append(exprs, r.Query)
			if r.Health != "ok" || r.LastError != "" || !r.LastEvaluation.After(start) {
				t.Errorf("rule %s/%s: health %q, error %q, last evaluated %v", g.Name, r.Name, r.Health, r.LastError, r.LastEvaluation)
			}
			if r.State != "inactive" {
				t.Logf("rule %s/%s is %s", g.Name, r.Name, r.State)
			}
		}
	}
	sort.Strings(groups)
	if !slices.Equal(groups, want) {
		t.Errorf("rule groups %q, want %q", groups, want)
	}
	if len(exprs) < 15 {
		t.Errorf("only %d rules loaded", len(exprs))
	}
	// Every series a rule selects exists.
	for _, sel := range selectors(exprs) {
		checkSelects(t, p, "rules", sel)
	}
}

// selectorRE finds the vector selectors of an expression: a metric name
// the project exports (or up) and its matchers.
var selectorRE = regexp.MustCompile(`\b(rocetor_[a-z0-9_]+|up)\b(\{[^}]*\})?`)

// selectors returns the distinct vector selectors of the expressions.
func selectors(exprs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range exprs {
		for _, m := range selectorRE.FindAllString(e, -1) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkSelects: a selector matches at least one series now.
func checkSelects(t *testing.T, p *prometheus, where, sel string) {
	t.Helper()
	s, err := p.query(t, "count("+sel+")", time.Time{})
	if err != nil {
		t.Errorf("%s: %s: %v", where, sel, err)
	} else if len(s) == 0 || s[0].Value == 0 {
		t.Errorf("%s select %s, and Prometheus has no such series", where, sel)
	}
}

// dashboardEmpty lists the dashboard's queries that may return no data
// on this testbed, by panel title, with the reason. A query not listed
// must return data; a listed one whose reason is a configuration this
// testbed does not have (mustBeEmpty) must not, so that the list neither
// grows nor goes stale without a failure. Each listed query is a
// comparison filter (… > 0): without the filter it must return data, so
// its series exist and only what they count is absent.
var dashboardEmpty = map[string]struct {
	reason      string
	mustBeEmpty bool
}{
	"Queue drops": {reason: "no egress queue overflows: roceperf paces at the switches' rate, and the loss is the impair rule's"},
	"Paused queues": {reason: "a queue is paused only while NetRT holds a sender back for congestion " +
		"(requested bytes over k_low within one window) or a PFC frame arrived: neither lasts past the transfers"},
	"Header-only drops": {reason: "no switch freed a header-only packet: the control queues never fill here, " +
		"and the HO packets the corrupting wire destroys are counted by impair (Destroyed on the wire)"},
	"ECN marks (DCQCN)": {reason: "no testbed here has an ecn: section, so no queue marks", mustBeEmpty: true},
	"Depth against ECN thresholds": {reason: "no testbed here has an ecn: section, so every queue's max threshold is 0",
		mustBeEmpty: true},
}

// dashQuery is one query of a dashboard panel.
type dashQuery struct{ title, expr string }

// dashVariable is one of the dashboard's template variables.
type dashVariable struct {
	Name       string
	Type       string
	Definition string
}

// readDashboard reads deploy/grafana/rocetor.json: every panel's queries,
// nested panels too, and the template variables.
func readDashboard(t *testing.T, src string) ([]dashQuery, []dashVariable) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(src, "deploy", "grafana", "rocetor.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string
		Targets []struct{ Expr string }
		Panels  []json.RawMessage
	}
	var dash struct {
		Panels     []json.RawMessage
		Templating struct {
			List []dashVariable
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	var queries []dashQuery
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				queries = append(queries, dashQuery{p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	if len(queries) < 40 {
		t.Fatalf("only %d dashboard queries", len(queries))
	}
	return queries, dash.Templating.List
}

// checkDashboard evaluates every query of deploy/grafana/rocetor.json:
// the variables' own queries first, then each panel's with the variables
// set as the dashboard opens (All: .*) and with every value picked by
// hand ((a|b|c)), $__rate_interval covering the whole test. Each must
// evaluate without error and, but for dashboardEmpty, return data; each
// series it selects must exist.
func checkDashboard(t *testing.T, p *prometheus, src string, beds []*bed, window time.Duration) {
	t.Helper()
	queries, variables := readDashboard(t, src)

	// The variables: label_values(SELECTOR, LABEL) is Grafana's; the
	// series API with match[] answers it.
	var switches, ports []string
	for _, b := range beds {
		for _, n := range b.tb.Plan().Switches() {
			switches = append(switches, b.instance(n.Name))
			ports = append(ports, b.tb.Plan().Ports(n.Name)...)
		}
	}
	all := map[string]string{"$instance": ".*", "$port": ".*"}
	picked := map[string]string{}
	labelValuesRE := regexp.MustCompile(`^label_values\((.*), *([a-z_]+)\)$`)
	for _, v := range variables {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", v.Name, v.Definition)
			continue
		}
		sel := strings.ReplaceAll(m[1], "$instance", all["$instance"])
		var values []string
		if err := p.get(t, "/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {sel}}, &values); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		sort.Strings(values)
		want := slices.Compact(slices.Sorted(slices.Values(map[string][]string{"instance": switches, "port": ports}[v.Name])))
		if !slices.Equal(values, want) {
			t.Errorf("variable %s = %q, want %q", v.Name, values, want)
		}
		picked["$"+v.Name] = "(" + strings.Join(values, "|") + ")"
	}
	if len(picked) != 2 {
		t.Fatalf("dashboard variables %v, want instance and port", picked)
	}

	rate := fmt.Sprintf("%ds", int(window.Seconds())+5)
	seenEmpty := map[string]bool{}
	var sels []string
	for _, vars := range []map[string]string{all, picked} {
		r := strings.NewReplacer("$__rate_interval", rate, "$instance", vars["$instance"], "$port", vars["$port"])
		for _, q := range queries {
			expr := r.Replace(q.expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q: a variable the test does not know: %s", q.title, expr)
				continue
			}
			sels = append(sels, expr)
			s, err := p.query(t, expr, time.Time{})
			if err != nil {
				t.Errorf("panel %q: %v", q.title, err)
				continue
			}
			allowed, listed := dashboardEmpty[q.title]
			switch {
			case len(s) > 0 && listed && allowed.mustBeEmpty:
				t.Errorf("panel %q returns data now; take it off dashboardEmpty (%s): %s", q.title, allowed.reason, expr)
			case len(s) > 0:
			case !listed:
				t.Errorf("panel %q returns no data (with %s): %s", q.title, vars["$port"], expr)
			default:
				seenEmpty[q.title] = true
				inner, ok := strings.CutSuffix(expr, " > 0")
				if !ok {
					t.Errorf("panel %q is on dashboardEmpty but is not a … > 0 filter: %s", q.title, expr)
				} else if s, err := p.query(t, inner, time.Time{}); err != nil || len(s) == 0 {
					t.Errorf("panel %q without its > 0 filter returns no data either (%v): %s", q.title, err, inner)
				}
			}
		}
	}
	for title, e := range dashboardEmpty {
		t.Logf("dashboard panel %q empty: %v (%s)", title, seenEmpty[title], e.reason)
	}
	for _, sel := range selectors(sels) {
		checkSelects(t, p, "the dashboard's queries", sel)
	}
}

// logTail returns the last lines of a log file.
func logTail(path string) string {
	out, _ := exec.Command("tail", "-n", "30", path).CombinedOutput()
	return string(out)
}
