package main

import (
	"flag"
	"slices"
	"strconv"
	"strings"

	"rocetor/nic/cc"
	"rocetor/nic/perf"
	"rocetor/nic/stack"
)

// ccNames are the congestion controls --cc takes.
var ccNames = stack.CCs

// uint32Flag is a flag.Value for a uint32 parameter.
type uint32Flag struct{ v *uint32 }

func (u uint32Flag) String() string {
	if u.v == nil {
		return "0"
	}
	return strconv.FormatUint(uint64(*u.v), 10)
}

func (u uint32Flag) Set(s string) error {
	x, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return err
	}
	*u.v = uint32(x)
	return nil
}

// dcqcnFlag is one DCQCN parameter's flag: --dcqcn- and ConnectX's name
// with dashes for underscores (--dcqcn-rpg-time-reset is rpg_time_reset).
type dcqcnFlag struct {
	name, unit string
	u          func(*cc.DCQCNConfig) *uint32
	b          func(*cc.DCQCNConfig) *bool
}

var dcqcnFlags = []dcqcnFlag{
	{name: "rpg_time_reset", unit: "µs: rate increase timer", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGTimeReset }},
	{name: "rpg_byte_reset", unit: "bytes: rate increase byte counter (0: off)", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGByteReset }},
	{name: "rpg_threshold", unit: "increase events per counter before additive increase", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGThreshold }},
	{name: "rpg_ai_rate", unit: "Mb/s: additive increase step", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGAIRate }},
	{name: "rpg_hai_rate", unit: "Mb/s: hyper increase step", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGHAIRate }},
	{name: "rpg_gd", unit: "log2 of alpha's divisor in a cut (11: alpha/2)", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGGD }},
	{name: "rpg_min_dec_fac", unit: "%: least share of the rate a cut leaves", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGMinDecFac }},
	{name: "rpg_min_rate", unit: "Mb/s: lowest rate", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RPGMinRate }},
	{name: "rate_to_set_on_first_cnp", unit: "Mb/s: rate a QP's first CNP sets (0: line rate)", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RateToSetOnFirstCNP }},
	{name: "rate_reduce_monitor_period", unit: "µs: at most one cut per period", u: func(c *cc.DCQCNConfig) *uint32 { return &c.RateReduceMonitorPeriod }},
	{name: "dce_tcp_g", unit: "1/1024: alpha's weight (g = 1 - dce_tcp_g/1024)", u: func(c *cc.DCQCNConfig) *uint32 { return &c.DCETCPG }},
	{name: "dce_tcp_rtt", unit: "µs: alpha update period", u: func(c *cc.DCQCNConfig) *uint32 { return &c.DCETCPRTT }},
	{name: "initial_alpha_value", unit: "1/1024: alpha on a QP's first CNP", u: func(c *cc.DCQCNConfig) *uint32 { return &c.InitialAlphaValue }},
	{name: "clamp_tgt_rate", unit: "every cut sets the target rate to the current rate", b: func(c *cc.DCQCNConfig) *bool { return &c.ClampTgtRate }},
	{name: "clamp_tgt_rate_after_time_inc", unit: "a cut sets the target rate when the timer raised the rate since the last", b: func(c *cc.DCQCNConfig) *bool { return &c.ClampTgtRateAfterTimeInc }},
	{name: "min_time_between_cnps", unit: "µs: a receiving QP sends at most one CNP per period", u: func(c *cc.DCQCNConfig) *uint32 { return &c.MinTimeBetweenCNPs }},
}

func dcqcnFlagName(p string) string { return "dcqcn-" + strings.ReplaceAll(p, "_", "-") }

// timelyFlag is one TIMELY parameter's flag: --timely- and the
// parameter's JSON name without its unit, dashes for underscores
// (--timely-t-low is t_low_us).
type timelyFlag struct {
	name, unit string
	u          func(*cc.TimelyConfig) *uint32
	f          func(*cc.TimelyConfig) *float64
}

var timelyFlags = []timelyFlag{
	{name: "t_low", unit: "µs: below it, additive increase", u: func(c *cc.TimelyConfig) *uint32 { return &c.TLow }},
	{name: "t_high", unit: "µs: above it, a cut by beta·(1 − t_high/RTT)", u: func(c *cc.TimelyConfig) *uint32 { return &c.THigh }},
	{name: "min_rtt", unit: "µs: the network's minimum RTT, the gradient's divisor", u: func(c *cc.TimelyConfig) *uint32 { return &c.MinRTT }},
	{name: "delta", unit: "Mb/s: additive increment", u: func(c *cc.TimelyConfig) *uint32 { return &c.Delta }},
	{name: "beta", unit: "multiplicative decrement factor", f: func(c *cc.TimelyConfig) *float64 { return &c.Beta }},
	{name: "alpha", unit: "EWMA weight of the newest RTT difference", f: func(c *cc.TimelyConfig) *float64 { return &c.Alpha }},
	{name: "hai_threshold", unit: "negative gradients in a row before hyperactive increase", u: func(c *cc.TimelyConfig) *uint32 { return &c.HAIThreshold }},
	{name: "hai_factor", unit: "hyperactive increase, in deltas", u: func(c *cc.TimelyConfig) *uint32 { return &c.HAIFactor }},
	{name: "segment", unit: "bytes of data per RTT sample", u: func(c *cc.TimelyConfig) *uint32 { return &c.SegmentBytes }},
	{name: "min_rate", unit: "Mb/s: lowest rate", u: func(c *cc.TimelyConfig) *uint32 { return &c.MinRate }},
}

func timelyFlagName(p string) string { return "timely-" + strings.ReplaceAll(p, "_", "-") }

// float64Flag is a flag.Value for a float64 parameter.
type float64Flag struct{ v *float64 }

func (f float64Flag) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f float64Flag) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*f.v = x
	return nil
}

// addCCFlags registers --cc, --line-rate, a flag per DCQCN parameter,
// each defaulting to ConnectX's default, and one per TIMELY parameter,
// each defaulting to the paper's.
func addCCFlags(fs *flag.FlagSet, o *perf.CCOptions) {
	o.Name = "none"
	d := cc.DefaultDCQCNConfig()
	o.DCQCN = &d
	tm := cc.DefaultTimelyConfig()
	o.Timely = &tm
	hp := cc.DefaultHPCCConfig()
	o.HPCC = &hp
	fs.Float64Var(&hp.Eta, "hpcc-eta", hp.Eta, "HPCC eta: target utilisation")
	fs.Var(uint32Flag{&hp.MaxStage}, "hpcc-max-stage", "HPCC maxStage: additive steps before a multiplicative one")
	fs.Float64Var(&hp.AI, "hpcc-ai", hp.AI, "HPCC W_AI/T, Mb/s (0: line rate / 2500)")
	fs.Float64Var(&hp.BaseRTT, "hpcc-base-rtt", hp.BaseRTT, "HPCC T, µs: base round trip")
	fs.IntVar(&hp.Hops, "hpcc-int-hops", hp.Hops, "HPCC INT records each request reserves")
	fs.BoolVar(&hp.FastReact, "hpcc-fast-react", hp.FastReact, "HPCC: update the rate on every ACK with INT")
	fs.BoolVar(&hp.Window, "hpcc-window", hp.Window, "HPCC: bound each QP's bytes in flight to rate × --hpcc-base-rtt (set that to the largest base round trip)")
	fs.StringVar(&o.Name, "cc", o.Name, "congestion control: "+strings.Join(ccNames, ", ")+" (both ends)")
	fs.Var(rateFlag{&o.LineBps}, "line-rate", "`RATE` bit/s DCQCN, TIMELY or HPCC starts each QP at, or the fixed pacer holds it to (default: --rate)")
	for _, f := range timelyFlags {
		if f.u != nil {
			fs.Var(uint32Flag{f.u(o.Timely)}, timelyFlagName(f.name), "TIMELY "+f.name+", "+f.unit)
		} else {
			fs.Var(float64Flag{f.f(o.Timely)}, timelyFlagName(f.name), "TIMELY "+f.name+": "+f.unit)
		}
	}
	for _, f := range dcqcnFlags {
		if f.u != nil {
			fs.Var(uint32Flag{f.u(o.DCQCN)}, dcqcnFlagName(f.name), "DCQCN "+f.name+", "+f.unit)
		} else {
			fs.BoolVar(f.b(o.DCQCN), dcqcnFlagName(f.name), *f.b(o.DCQCN), "DCQCN "+f.name+": "+f.unit)
		}
	}
}

// checkCC completes and checks o after parsing: the line rate defaults
// to the port's --rate; DCQCN flags need --cc dcqcn, TIMELY flags --cc
// timely.
func checkCC(fs *flag.FlagSet, o *perf.CCOptions, rate uint64) error {
	var stray, need string
	fs.Visit(func(f *flag.Flag) {
		for _, cc := range []string{"dcqcn", "timely", "hpcc"} {
			if strings.HasPrefix(f.Name, cc+"-") && o.Name != cc {
				stray, need = f.Name, cc
			}
		}
	})
	switch {
	case stray != "":
		return usagef("--%s without --cc %s", stray, need)
	case !validCC(o.Name):
		return usagef("--cc %q: want %s", o.Name, strings.Join(ccNames, ", "))
	}
	if o.Name != "dcqcn" {
		o.DCQCN = nil
	}
	if o.Name != "timely" {
		o.Timely = nil
	}
	if o.Name != "hpcc" {
		o.HPCC = nil
	}
	if o.Name == "none" {
		o.LineBps = 0
		return nil
	}
	if o.LineBps == 0 {
		o.LineBps = rate
	}
	if o.LineBps == 0 {
		return usagef("--cc %s needs --line-rate (or --rate)", o.Name)
	}
	if _, err := o.Build(); err != nil {
		return usagef("--cc %s: %v", o.Name, err)
	}
	return nil
}

func validCC(n string) bool { return slices.Contains(ccNames, n) }
