package stack_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"rocetor/nic/cc"
	"rocetor/nic/dcp"
	"rocetor/nic/fasr"
	"rocetor/nic/gbn"
	"rocetor/nic/irn"
	"rocetor/nic/stack"
)

// TestEveryName builds every transport and congestion control by name,
// each the type its name says.
func TestEveryName(t *testing.T) {
	for _, name := range append([]string{""}, stack.Transports...) {
		c := stack.Config{Transport: name}
		if err := c.Validate(); err != nil {
			t.Errorf("transport %q: %v", name, err)
		}
		tr, err := c.NewTransport()
		if err != nil {
			t.Fatalf("transport %q: %v", name, err)
		}
		var ok bool
		switch name {
		case "", "gbn":
			_, ok = tr.(*gbn.Transport)
		case "irn":
			_, ok = tr.(*irn.Transport)
		case "fasr":
			_, ok = tr.(*fasr.Transport)
		case "dcp":
			_, ok = tr.(*dcp.Transport)
		}
		if !ok {
			t.Errorf("transport %q built a %T", name, tr)
		}
	}
	for _, name := range append([]string{""}, stack.CCs...) {
		c := stack.Config{CC: name}
		if err := c.Validate(); err != nil {
			t.Errorf("cc %q: %v", name, err)
		}
		ctl, err := c.NewCC(1e9)
		if err != nil {
			t.Fatalf("cc %q: %v", name, err)
		}
		var ok bool
		switch name {
		case "", "none":
			ok = ctl == nil
		case "fixed":
			_, ok = ctl.(*cc.Fixed)
		case "dcqcn":
			_, ok = ctl.(*cc.DCQCN)
		case "timely":
			_, ok = ctl.(*cc.Timely)
		case "hpcc":
			_, ok = ctl.(*cc.HPCC)
		}
		if !ok {
			t.Errorf("cc %q built a %T", name, ctl)
		}
	}
}

// TestBadNames: an unknown name is a sentinel error whose message
// names the choices.
func TestBadNames(t *testing.T) {
	c := stack.Config{Transport: "tcp"}
	_, err := c.NewTransport()
	if !errors.Is(err, stack.ErrUnknownTransport) || !strings.Contains(err.Error(), `"tcp"`) ||
		!strings.Contains(err.Error(), "gbn, irn, fasr, dcp") {
		t.Errorf("transport tcp: %v", err)
	}
	if err := c.Validate(); !errors.Is(err, stack.ErrUnknownTransport) {
		t.Errorf("Validate, transport tcp: %v", err)
	}
	c = stack.Config{CC: "cubic"}
	_, err = c.NewCC(1e9)
	if !errors.Is(err, stack.ErrUnknownCC) || !strings.Contains(err.Error(), `"cubic"`) ||
		!strings.Contains(err.Error(), "none, fixed, dcqcn, timely") {
		t.Errorf("cc cubic: %v", err)
	}
	if err := c.Validate(); !errors.Is(err, stack.ErrUnknownCC) {
		t.Errorf("Validate, cc cubic: %v", err)
	}
	if stack.KnownTransport("tcp") || !stack.KnownTransport("irn") || stack.KnownCC("cubic") || !stack.KnownCC("fixed") {
		t.Error("Known* disagree with the lists")
	}
}

// TestValidate checks the ranges and a congestion control without a
// rate.
func TestValidate(t *testing.T) {
	bad := map[string]stack.Config{
		"negative RTO":    {RTO: -1},
		"BDP above max":   {Transport: "irn", BDP: stack.MaxBDP + 1},
		"negative BDP":    {BDP: -1},
		"negative window": {GBNWindow: -1},
		"bad DCQCN":       {CC: "dcqcn", DCQCN: &cc.DCQCNConfig{}},
		"bad TIMELY":      {CC: "timely", Timely: &cc.TimelyConfig{}},
	}
	for what, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: valid", what)
		}
	}
	err := stack.Config{Transport: "dcp", CC: "timely"}.Validate()
	if !errors.Is(err, stack.ErrPairing) || !strings.Contains(err.Error(), "dcp acknowledges whole messages") {
		t.Errorf("dcp with timely: %v", err)
	}
	for _, tr := range []string{"gbn", "irn", "fasr"} {
		if err := (stack.Config{Transport: tr, CC: "timely"}).Validate(); err != nil {
			t.Errorf("%s with timely: %v", tr, err)
		}
	}
	for _, name := range []string{"fixed", "dcqcn", "timely"} {
		if _, err := (stack.Config{CC: name}).NewCC(0); err == nil {
			t.Errorf("cc %s without a rate built", name)
		}
		if _, err := (stack.Config{CC: name, LineBps: 1e9}).NewCC(0); err != nil {
			t.Errorf("cc %s at Config.LineBps: %v", name, err)
		}
	}
}

// TestIRNTimeouts checks how RTO maps onto IRN's two timeouts and its
// backoff bound.
func TestIRNTimeouts(t *testing.T) {
	for _, c := range []struct {
		rto             time.Duration
		low, high, maxr int64
	}{
		{0, 8_000_000, 16_000_000, 256_000_000},
		{time.Millisecond, 1_000_000, 1_000_000, 256_000_000},
		{100 * time.Microsecond, 100_000, 100_000, 256_000_000},
		{16 * time.Millisecond, 8_000_000, 16_000_000, 256_000_000},
		{32 * time.Millisecond, 8_000_000, 32_000_000, 512_000_000},
	} {
		tr, err := stack.Config{Transport: "irn", RTO: c.rto}.NewTransport()
		if err != nil {
			t.Fatal(err)
		}
		cfg := tr.(*irn.Transport).Config()
		if cfg.RTOLow != c.low || cfg.RTOHigh != c.high || cfg.MaxRTO != c.maxr {
			t.Errorf("RTO %v: low %d high %d max %d", c.rto, cfg.RTOLow, cfg.RTOHigh, cfg.MaxRTO)
		}
	}
}

// TestWindows: BDP sizes IRN's window (in 1 KiB packets) and FaSR's
// window and pool; 0 is DefaultBDP.
func TestWindows(t *testing.T) {
	for _, bdp := range []int{0, 64, 500} {
		want := bdp
		if want == 0 {
			want = stack.DefaultBDP
		}
		tr, err := stack.Config{Transport: "irn", BDP: bdp}.NewTransport()
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.(*irn.Transport).Config().BDP; got != want<<10 {
			t.Errorf("irn BDP %d: %d bytes", bdp, got)
		}
		tr, err = stack.Config{Transport: "fasr", BDP: bdp, RTO: 3 * time.Millisecond}.NewTransport()
		if err != nil {
			t.Fatal(err)
		}
		if c := tr.(*fasr.Transport).Config(); c.Window != want || c.BDP != want || c.RTO != 3e6 {
			t.Errorf("fasr BDP %d: window %d BDP %d RTO %d", bdp, c.Window, c.BDP, c.RTO)
		}
	}
	if _, err := (stack.Config{GBNWindow: 64}).NewTransport(); err != nil {
		t.Errorf("gbn window 64: %v", err)
	}
}

// TestIRNAblations passes IRN's two ablations (seed 004 §4.3) through
// to its Config, and refuses a tracked span out of range.
func TestIRNAblations(t *testing.T) {
	tr, err := stack.Config{Transport: "irn", BDP: 110, IRNGoBackN: true, IRNNoBDPFC: 3000}.NewTransport()
	if err != nil {
		t.Fatal(err)
	}
	c := tr.(*irn.Transport).Config()
	if !c.GoBackN || c.NoBDPFC != 3000 || tr.(*irn.Transport).Window(1024) != 3000 {
		t.Errorf("config %+v, window %d: want go-back-N and BDP-FC off over 3000 packets", c, tr.(*irn.Transport).Window(1024))
	}
	if err := (stack.Config{Transport: "irn", IRNNoBDPFC: stack.MaxBDP + 1}).Validate(); err == nil {
		t.Error("IRNNoBDPFC past MaxBDP accepted")
	}
}

// TestDCPRetransQ passes DCP's RetransQ size through to its Config,
// leaves dcp's default at 0, and refuses a negative size.
func TestDCPRetransQ(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, 256}, {4096, 4096}} {
		tr, err := stack.Config{Transport: "dcp", DCPRetransQ: tc.set}.NewTransport()
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.(*dcp.Transport).Config().RetransQ; got != tc.want {
			t.Errorf("DCPRetransQ %d: RetransQ %d, want %d", tc.set, got, tc.want)
		}
	}
	if err := (stack.Config{Transport: "dcp", DCPRetransQ: -1}).Validate(); err == nil {
		t.Error("a negative RetransQ accepted")
	}
}

// TestDCPWindow passes DCP's window through to its Config, none at 0,
// and refuses a negative one.
func TestDCPWindow(t *testing.T) {
	for _, w := range []int{0, 110} {
		tr, err := stack.Config{Transport: "dcp", DCPWindow: w}.NewTransport()
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.(*dcp.Transport).Config().Window; got != w {
			t.Errorf("DCPWindow %d: Window %d", w, got)
		}
	}
	if err := (stack.Config{Transport: "dcp", DCPWindow: -1}).Validate(); err == nil {
		t.Error("a negative window accepted")
	}
}
