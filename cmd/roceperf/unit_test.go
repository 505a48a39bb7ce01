package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"rocetor/dataplane"
	"rocetor/nic/perf"
)

func TestParseClient(t *testing.T) {
	base := []string{"--dev", "eth0", "--to", "10.0.0.2", "--size", "4KiB", "--count", "200"}
	o, err := parseClient("write", append(base, "--qps", "4", "--rate", "1G"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != 4096 || o.Count != 200 || o.QPs != 4 || o.Rate != 1e9 || o.To != "10.0.0.2:18515" ||
		o.Transport != "gbn" || o.MTU != 1024 || o.Timeout != 10*time.Second || o.Depth != 64 || o.Poll != dataplane.Adaptive {
		t.Errorf("parsed %+v", o)
	}
	if o, err := parseClient("write", append(base, "--poll", "interrupt"), &bytes.Buffer{}); err != nil || o.Poll != dataplane.Interrupt {
		t.Errorf("--poll interrupt: %+v, %v", o, err)
	}
	if o, err := parseClient("write", append(base, "--tclass", "138", "--cnp-dscp", "46"), &bytes.Buffer{}); err != nil ||
		o.Class != (perf.ClassOptions{TClass: 138, CNPDSCP: 46}) {
		t.Errorf("--tclass 138 --cnp-dscp 46: %+v, %v", o.Class, err)
	}
	if o, err := parseClient("write", append(base, "--tclass", "2"), &bytes.Buffer{}); err != nil ||
		o.Class != (perf.ClassOptions{BestEffort: true}) {
		t.Errorf("--tclass 2: %+v, %v; want DSCP 0 (best effort)", o.Class, err)
	}
	if o, err := parseClient("send", append(base, "--transport", "dcp"), &bytes.Buffer{}); err != nil || o.Transport != "dcp" {
		t.Errorf("send over dcp: %+v, %v", o, err)
	}
	if o, err := parseClient("read", append(base, "--transport", "irn", "--rto", "2ms"), &bytes.Buffer{}); err != nil ||
		o.Transport != "irn" || o.RTO != 2*time.Millisecond {
		t.Errorf("read over irn: %+v, %v", o, err)
	}
	if _, err := parseClient("read", append(base, "--transport", "dcp"), &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "does not do read") {
		t.Errorf("read over dcp: %v, want a usage error", err)
	}
	for _, c := range []struct{ size, qps, depth int }{
		{1 << 20, 1, 2}, {4096, 1, 64}, {100, 1, 64}, {64 << 10, 1, 4}, {4096, 1000, 4}, {1 << 20, 1000, 1}, {4096, 100, 40},
	} {
		if d := perf.AutoDepth(c.size, c.qps); d != c.depth {
			t.Errorf("autoDepth(%d, %d) = %d, want %d", c.size, c.qps, d, c.depth)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "h", "--size", "1", "--count", "1"}, "--dev is required"},
		{[]string{"--dev", "e", "--size", "1", "--count", "1"}, "--to is required"},
		{append(base[:4:4], "--size", "0", "--count", "1"), "--size 0"},
		{append(base[:4:4], "--size", "2GiB", "--count", "1"), "--size 2147483648"},
		{append(base[:4:4], "--size", "lots", "--count", "1"), "invalid value"},
		{append(base, "--transport", "tcp"), `unknown transport "tcp"`},
		{append(base, "--mtu", "1500"), "--mtu 1500"},
		{append(base, "--qps", "0"), "--qps 0"},
		{append(base, "--qps", "8193"), "--qps 8193"},
		{append(base, "--count", "0"), "--count 0"},
		{append(base, "--timeout", "0s"), "--timeout"},
		{append(base, "--rate", "fast"), "invalid value"},
		{append(base, "--poll", "spinning"), `poll mode "spinning"`},
		{append(base, "--tclass", "256"), "want 0 to 255"},
		{append(base, "--cnp-dscp", "64"), "--cnp-dscp 64"},
		{append(base, "--nope"), "flag provided but not defined"},
		{append(base, "extra"), `unexpected argument "extra"`},
		{[]string{"--dev", "e", "--to", "h", "--size", "1GiB", "--count", "1", "--qps", "2"}, "limit"},
		{[]string{"--dev", "e", "--to", "h:99999", "--size", "1", "--count", "1"}, "port"},
	} {
		_, err := parseClient("write", tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestManyQPs: 5,000 QPs (FaSR's concurrency, seed 001 §V-C) parse with
// one 4 KiB message in flight each, and every run's QPNs stay within 24
// bits whatever base it draws.
func TestManyQPs(t *testing.T) {
	o, err := parseClient("write", []string{"--dev", "e", "--to", "h", "--size", "4KiB", "--count", "20000", "--qps", "5000"}, &bytes.Buffer{})
	if err != nil || o.Depth != 1 {
		t.Fatalf("5000 QPs: %+v, %v", o, err)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.2":        "10.0.0.2:18515",
		"10.0.0.2:7000":   "10.0.0.2:7000",
		"fd02::2":         "[fd02::2]:18515",
		"[fd02::2]":       "[fd02::2]:18515",
		"[fd02::2]:7000":  "[fd02::2]:7000",
		"server":          "server:18515",
		"server.lan:9000": "server.lan:9000",
	} {
		if got, err := hostPort(in); err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseServer(t *testing.T) {
	o, err := parseServer([]string{"--dev", "eth0", "--once", "--max-mr", "1MiB"}, &bytes.Buffer{})
	if err != nil || !o.Once || o.MaxMR != 1<<20 || o.Listen != ":18515" || o.Poll != dataplane.Adaptive {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	if o, err := parseServer([]string{"--dev", "eth0", "--poll", "busy"}, &bytes.Buffer{}); err != nil || o.Poll != dataplane.Busy {
		t.Errorf("--poll busy: %+v, %v", o, err)
	}
	if o, err := parseServer([]string{"--dev", "eth0", "--tclass", "106", "--cnp-dscp", "48"}, &bytes.Buffer{}); err != nil ||
		o.Class != (perf.ClassOptions{TClass: 106, CNPDSCP: 48}) {
		t.Errorf("--tclass 106 --cnp-dscp 48: %+v, %v", o.Class, err)
	}
	for _, args := range [][]string{{}, {"--dev", "e", "--listen", "nope"}, {"--dev", "e", "--max-mr", "0"}, {"--dev", "e", "--poll", "x"},
		{"--dev", "e", "--tclass", "300"}} {
		if _, err := parseServer(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// TestUsageExit: bad flags and unknown commands exit 2 with a message;
// -h exits 0.
func TestUsageExit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "usage"},
		{[]string{"fly"}, exitUsage, `unknown command "fly"`},
		{[]string{"write", "--dev", "e", "--to", "h", "--size", "0", "--count", "1"}, exitUsage, "--size 0"},
		{[]string{"send", "--dev", "e", "--to", "h", "--size", "1", "--count", "1", "--transport", "x"}, exitUsage, "unknown transport"},
		{[]string{"serve"}, exitUsage, "--dev is required"},
		{[]string{"read", "-h"}, exitOK, "usage"},
	} {
		var out, errb bytes.Buffer
		code := runContext(t.Context(), tc.args, &out, &errb, nil)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.msg) {
			t.Errorf("%q: exit %d, output %q; want exit %d and %q", tc.args, code, out.String()+errb.String(), tc.code, tc.msg)
		}
	}
}
