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

// addCCFlags registers --cc, --line-rate and a flag per DCQCN parameter,
// each defaulting to ConnectX's default.
func addCCFlags(fs *flag.FlagSet, o *perf.CCOptions) {
	o.Name = "none"
	d := cc.DefaultDCQCNConfig()
	o.DCQCN = &d
	fs.StringVar(&o.Name, "cc", o.Name, "congestion control: "+strings.Join(ccNames, ", ")+" (both ends)")
	fs.Var(rateFlag{&o.LineBps}, "line-rate", "`RATE` bit/s DCQCN starts each QP at, or the fixed pacer holds it to (default: --rate)")
	for _, f := range dcqcnFlags {
		if f.u != nil {
			fs.Var(uint32Flag{f.u(o.DCQCN)}, dcqcnFlagName(f.name), "DCQCN "+f.name+", "+f.unit)
		} else {
			fs.BoolVar(f.b(o.DCQCN), dcqcnFlagName(f.name), *f.b(o.DCQCN), "DCQCN "+f.name+": "+f.unit)
		}
	}
}

// checkCC completes and checks o after parsing: the line rate defaults
// to the port's --rate; DCQCN flags need --cc dcqcn.
func checkCC(fs *flag.FlagSet, o *perf.CCOptions, rate uint64) error {
	var stray string
	fs.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "dcqcn-") && o.Name != "dcqcn" {
			stray = f.Name
		}
	})
	switch {
	case stray != "":
		return usagef("--%s without --cc dcqcn", stray)
	case !validCC(o.Name):
		return usagef("--cc %q: want %s", o.Name, strings.Join(ccNames, ", "))
	}
	if o.Name != "dcqcn" {
		o.DCQCN = nil
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
