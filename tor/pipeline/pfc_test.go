package pipeline

import (
	"errors"
	"strings"
	"testing"
	"time"

	"rocetor/tor/fwd"
)

// TestHeadroom: the worked example of tor/pipeline/pfc.go, component by
// component from the source's figures (10 GbE, 100 m, MTU 9216:
// D-Max-Frame 73888 BT, D-Pause 672 BT, 5000 BT of cable each way,
// D-Intf 8192 BT, D-Resp 60 quanta), and how each input moves it.
func TestHeadroom(t *testing.T) {
	in := HeadroomInput{RateBps: 10e9, CableMeters: 100, MTU: 9216}
	const bt = 73888 + 672 + 2*5000 + 2*8192 + 60*512 + 73888
	if bt != 205552 {
		t.Fatalf("the worked example sums to %d bit times, the doc says 205552", bt)
	}
	if got := Headroom(in); got != 25694 {
		t.Fatalf("10 GbE, 100 m, MTU 9216: %d bytes, want 25694 (%d bit times)", got, bt)
	}
	// Each metre adds 2 × 5 ns of the link's bits; 1 µs of response
	// adds 1250 bytes at 10 Gbit/s in place of the default.
	more := in
	more.CableMeters = 300
	if d := Headroom(more) - Headroom(in); d != 2*200*5*10/8 {
		t.Errorf("200 m more cable: %d bytes more, want %d", d, 2*200*5*10/8)
	}
	fast := in
	fast.Response = time.Microsecond
	if got, want := Headroom(fast), (73888+672+2*5000+10000+73888)/8; got != want {
		t.Errorf("response 1 µs: %d bytes, want %d", got, want)
	}
	// 100 GbE: 394 quanta of reaction and 122880 BT per interface.
	h100 := HeadroomInput{RateBps: 100e9, CableMeters: 100, MTU: 9216}
	if got, want := Headroom(h100), (73888+672+2*50000+2*122880+394*512+73888+7)/8; got != want {
		t.Errorf("100 GbE: %d bytes, want %d", got, want)
	}
}

// TestPFCLossless: the enable vector, the headroom and the watchdog of
// the pfc section reach the worker; without xoff it is derived from the
// queue limit less the headroom; a headroom that does not fit is
// refused; a buffer section keeps the headroom out of its pool; and an
// old section still means what it did.
func TestPFCLossless(t *testing.T) {
	const eg = "egress: {rate: 10G, queue_limit: 256KiB}\n"
	parse := func(y string) Config {
		t.Helper()
		c, err := ParseConfig([]byte("ports: [up, h1]\n"+eg+y), "test")
		if err != nil {
			t.Fatal(err)
		}
		c.AdminAddr, c.MetricsAddr = "", ""
		return c
	}
	for y, field := range map[string]string{
		eg + "pfc: {xoff: 240KiB, headroom: 32KiB}\n":                            "pfc",
		eg + "pfc: {priorities: [8], xoff: 64KiB}\n":                             "pfc.priorities",
		eg + "pfc: {headroom: 32KiB, cable_length: 100}\n":                       "pfc.headroom",
		eg + "pfc: {xoff: 64KiB, watchdog: {action: shrug}}\n":                   "pfc.watchdog.action",
		eg + "pfc: {xoff: 64KiB, watchdog: {detection: -1s}}\n":                  "pfc.watchdog",
		eg + "buffer: {size: 384KiB}\npfc: {headroom: 200KiB}\n":                 "pfc", // 2 ports × 200 KiB pass what the reserves leave
		"egress: {queue_limit: 256KiB}\npfc: {xoff: 64KiB, cable_length: 100}\n": "pfc.cable_length",
	} {
		c, err := ParseConfig([]byte("ports: [up, h1]\n"+y), "test")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%q: %v, want an error naming %s", y, err, field)
		}
	}
	build := func(c Config) *Plan {
		t.Helper()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		pn, err := NewPlan(&c, &fwd.FIB{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pn
	}
	c := parse("pfc: {priorities: [3], cable_length: 100, watchdog: {detection: 100ms, action: forward}}\n")
	pn := build(c)
	mem, ports := twoPorts(t)
	pl, err := pn.Build(0, mem, ports, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	h := Headroom(HeadroomInput{RateBps: 10e9, CableMeters: 100, MTU: DefaultMTU})
	got, _ := pl.Worker.IngressPFC()
	if got.Priorities != 1<<3 || got.XOff != 256<<10-h || got.XOn != (256<<10-h)/2 {
		t.Errorf("worker's PFC %+v: want priority 3, xoff 256 KiB − %d bytes of headroom, xon half", got, h)
	}
	wd, ok := pl.Worker.PFCWatchdog()
	if !ok || wd.Detection != int64(100*time.Millisecond) || wd.Restoration != int64(200*time.Millisecond) || !wd.Forward || wd.Priorities != 1<<3 {
		t.Errorf("worker's watchdog %+v, %v", wd, ok)
	}
	// The buffer keeps a headroom per lossless port and priority aside.
	c = parse("buffer: {size: 4MiB, queue_reserve: 8KiB}\npfc: {priorities: [3], headroom: 32KiB, ports: [h1]}\n")
	pn = build(c)
	if got, want := pn.Buffer.Size(), int64(4<<20-4*2*8<<10-32<<10); got != want {
		t.Errorf("shared pool %d bytes, want %d: size less the reserves and one port's headroom", got, want)
	}
	mem, ports = twoPorts(t)
	pl, err = pn.Build(0, mem, ports, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pl.Worker.IngressPFC(); got.Headroom != 32<<10 {
		t.Errorf("worker's headroom %d bytes, want the 32 KiB the pool kept aside", got.Headroom)
	}
	// An old section: no vector, no headroom, no watchdog.
	c = parse("pfc: {xoff: 64KiB, xon: 32KiB}\n")
	pn = build(c)
	mem, ports = twoPorts(t)
	if pl, err = pn.Build(0, mem, ports, func() int64 { return 0 }); err != nil {
		t.Fatal(err)
	}
	if got, _ := pl.Worker.IngressPFC(); got.Priorities != 0 || got.XOff != 64<<10 || got.XOn != 32<<10 {
		t.Errorf("old section: %+v", got)
	}
	if _, ok := pl.Worker.PFCWatchdog(); ok {
		t.Error("a watchdog without a watchdog section")
	}
}
