package impair

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/rocev2"
)

const example = `
impair:
  seed: 1
  hold_bytes: 2MiB
  rules:
    - port: p1
      direction: egress
      match: roce
      opcodes: [RC_RDMA_WRITE_MIDDLE, 0x0a]
      dscp: 26
      loss: 0.01
      burst: {p: 0.001, r: 0.3, k: 1, h: 0}
      corrupt: 1e-4
      duplicate: 0
      reorder: {p: 0.01, delay: 50us}
      delay: {mean: 10us, jitter: 5us}
      rate: 1G
      rate_burst: 64KiB
    - port: p0
      direction: ingress
      burst: {loss: 0.01, length: 4}
`

func TestConfigYAML(t *testing.T) {
	var doc struct {
		Impair Config `yaml:"impair"`
	}
	d := yaml.NewDecoder(strings.NewReader(example))
	d.KnownFields(true)
	if err := d.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Impair
	ctl, err := NewControl(c, []string{"p0", "p1"})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rules[0]
	if c.Seed != 1 || c.HoldBytes != 2<<20 || r.Rate != 1e9 || r.RateBurst != 64<<10 || *r.DSCP != 26 ||
		r.Reorder.Delay != 50*time.Microsecond || r.Delay.Jitter != 5*time.Microsecond || *r.Burst.K != 1 {
		t.Fatalf("decoded %+v", c)
	}
	k := ctl.load().rules[0]
	if k.ops[0] != 1<<rocev2.RCWriteMiddle|1<<rocev2.RCWriteOnly || k.dscp != 26 || !k.roce || k.dir != Egress ||
		k.delay != 5e3 || k.jitter != 10e3 || k.loss != threshold(0.01) || k.geLossB != one || k.geLoss != 0 {
		t.Fatalf("compiled %+v", k)
	}
	// the convenience form: r = 1/length, p = loss·r/(1−loss)
	if k := ctl.load().rules[1]; k.geR != threshold(0.25) || k.geP != threshold(0.01*0.25/0.99) || k.roce {
		t.Fatalf("compiled %+v", k)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	two := 2.0
	ok := Rule{Port: "p0", Direction: "ingress"}
	cases := []struct {
		edit  func(r *Rule)
		field string
	}{
		{func(r *Rule) { r.Port = "" }, "rules[0].port"},
		{func(r *Rule) { r.Port = "eth9" }, "rules[0].port"},
		{func(r *Rule) { r.Direction = "both" }, "rules[0].direction"},
		{func(r *Rule) { r.Match = "rdma" }, "rules[0].match"},
		{func(r *Rule) { r.Opcodes = []string{"RC_ACKNOWLEDGE"} }, "rules[0].opcodes"},
		{func(r *Rule) { r.Match, r.Opcodes = "roce", []string{"RC_NOPE"} }, "rules[0].opcodes[0]"},
		{func(r *Rule) { r.DSCP = new(int); *r.DSCP = 64 }, "rules[0].dscp"},
		{func(r *Rule) { r.Loss = 1.5 }, "rules[0].loss"},
		{func(r *Rule) { r.Corrupt = -0.1 }, "rules[0].corrupt"},
		{func(r *Rule) { r.Duplicate = 2 }, "rules[0].duplicate"},
		{func(r *Rule) { r.Burst = &Burst{P: 0.1, R: 1.1} }, "rules[0].burst.r"},
		{func(r *Rule) { r.Burst = &Burst{P: 0.1, R: 0.5, K: &two} }, "rules[0].burst.k"},
		{func(r *Rule) { r.Burst = &Burst{P: 0.1, Loss: 0.1, Length: 2} }, "rules[0].burst"},
		{func(r *Rule) { r.Burst = &Burst{Loss: 0.1, Length: 0.5} }, "rules[0].burst.length"},
		{func(r *Rule) { r.Burst = &Burst{Loss: 0.6, Length: 1} }, "rules[0].burst.loss"},
		{func(r *Rule) { r.Reorder = &Reorder{P: 0.1} }, "rules[0].reorder.delay"},
		{func(r *Rule) { r.Reorder = &Reorder{P: 1.1, Delay: 1} }, "rules[0].reorder.p"},
		{func(r *Rule) { r.Delay = &Delay{Mean: -1} }, "rules[0].delay.mean"},
		{func(r *Rule) { r.Delay = &Delay{Mean: 10, Jitter: 11} }, "rules[0].delay.jitter"},
		{func(r *Rule) { r.RateBurst = 1000 }, "rules[0].rate_burst"},
	}
	for _, c := range cases {
		r := ok
		c.edit(&r)
		cfg := Config{Rules: []Rule{r}}
		err := cfg.Validate([]string{"p0", "p1"})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
	if err := (&Config{HoldBytes: -1}).Validate(nil); err == nil || !strings.Contains(err.Error(), "hold_bytes") {
		t.Errorf("hold_bytes: err = %v", err)
	}
}

// TestUpdate swaps the rule set from another goroutine while the worker
// runs: the next batch applies it, the counters go on counting, and an
// invalid update changes nothing.
func TestUpdate(t *testing.T) {
	f := roce(t, rocev2.RCWriteMiddle, 0, 64)
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress"}), rigOpt{})
	r.stream(f, 100, 10, 1000)
	if len(r.seq[1]) != 100 {
		t.Fatalf("%d of 100 delivered before the update", len(r.seq[1]))
	}
	done := make(chan error)
	go func() { done <- r.ctl.Update(single(Rule{Port: "p1", Direction: "egress", Loss: 1})) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- r.ctl.Update(single(Rule{Port: "p7", Direction: "egress"})) }()
	if err := <-done; !errors.Is(err, ErrConfig) || r.ctl.Config().Rules[0].Loss != 1 {
		t.Fatalf("invalid update: err %v, config now %+v", err, r.ctl.Config())
	}
	r.stream(f, 100, 10, 1000)
	st := r.ip[1].Counters()
	if d := st.Dir[Egress]; len(r.seq[1]) != 100 || st.Sets != 2 || d.Matched != 200 || d.Caused(CauseLoss) != 100 {
		t.Fatalf("after the update: %d delivered, %+v", len(r.seq[1]), st)
	}
	r.noLeak()
}

// SetPort switches a port's rules off and on; Updates keep the toggle.
func TestSetPort(t *testing.T) {
	f := roce(t, rocev2.RCWriteMiddle, 0, 64)
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Loss: 1}), rigOpt{})
	if r.ctl.SetPort("p9", false) {
		t.Fatal("an unknown port switched")
	}
	if !r.ctl.SetPort("p1", false) || r.ctl.PortOn("p1") {
		t.Fatal("p1 not switched off")
	}
	r.stream(f, 50, 10, 1000)
	if len(r.seq[1]) != 50 {
		t.Fatalf("%d of 50 delivered with the lossy rule switched off", len(r.seq[1]))
	}
	if err := r.ctl.Update(single(Rule{Port: "p1", Direction: "egress", Loss: 1})); err != nil {
		t.Fatal(err)
	}
	r.stream(f, 50, 10, 1000)
	if len(r.seq[1]) != 100 || len(r.ctl.Config().Rules) != 1 {
		t.Fatalf("after an update: %d of 100 delivered, config %+v", len(r.seq[1]), r.ctl.Config())
	}
	r.ctl.SetPort("p1", true)
	r.stream(f, 50, 10, 1000)
	if len(r.seq[1]) != 100 || !r.ctl.PortOn("p1") {
		t.Fatalf("switched on again: %d delivered, want the 100 from before", len(r.seq[1]))
	}
	r.noLeak()
}
