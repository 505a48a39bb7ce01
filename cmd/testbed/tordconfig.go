package main

import (
	"bytes"
	"fmt"
	"net"
	"strconv"

	"go.yaml.in/yaml/v3"

	"rocetor/tor/impair"
)

// TordConfig is the part of tord's YAML configuration (cmd/tord/config.go)
// that testbed writes, one file per switch. Fields left out keep tord's
// defaults.
type TordConfig struct {
	Ports       []string `yaml:"ports"`
	Workers     int      `yaml:"workers"`
	Poll        string   `yaml:"poll"`
	MetricsAddr string   `yaml:"metrics_addr"`
	AdminAddr   string   `yaml:"admin_addr"`
	LogLevel    string   `yaml:"log_level"`
	XDP         struct {
		Frames   int `yaml:"frames,omitempty"`
		RingSize int `yaml:"ring_size,omitempty"`
	} `yaml:"xdp,omitempty"`
	Egress struct {
		Rate string `yaml:"rate"`
	} `yaml:"egress"`
	Forwarding struct {
		Multipath string `yaml:"multipath"`
	} `yaml:"forwarding"`
	Impair *ImpairConfig `yaml:"impair,omitempty"`
}

// ImpairConfig is tord's impair: section as testbed writes it: the
// subset of impair.Config it uses, with empty fields left out so the
// file reads like the examples in tor/impair/doc.go.
type ImpairConfig struct {
	Seed  uint64       `yaml:"seed"`
	Rules []ImpairRule `yaml:"rules"`
}

// ImpairRule is one rule of ImpairConfig.
type ImpairRule struct {
	Port      string       `yaml:"port"`
	Direction string       `yaml:"direction"`
	Match     string       `yaml:"match"`
	Loss      float64      `yaml:"loss,omitempty"`
	Burst     *ImpairBurst `yaml:"burst,omitempty"`
	Corrupt   float64      `yaml:"corrupt,omitempty"`
}

// ImpairBurst is Gilbert–Elliott loss by mean rate and mean burst length.
type ImpairBurst struct {
	Loss   float64 `yaml:"loss"`
	Length float64 `yaml:"length"`
}

// Impairment is what the impair sites do: a loss rate, optionally in
// bursts, and a corruption rate.
type Impairment struct {
	Loss    float64 `json:"loss"`
	Burst   float64 `json:"burst,omitempty"` // mean burst length in packets; 0 = independent losses
	Corrupt float64 `json:"corrupt,omitempty"`
	Seed    uint64  `json:"seed"`
}

// Impairment returns the options' impairment.
func (o *Options) Impairment() Impairment {
	return Impairment{Loss: o.Loss, Burst: o.Burst, Corrupt: o.Corrupt, Seed: o.Seed}
}

// Zero reports whether the impairment does nothing.
func (m Impairment) Zero() bool { return m.Loss == 0 && m.Corrupt == 0 }

// Rule returns the impair rule for one site, or nil when m does nothing.
// Only RoCEv2 frames are impaired, so ARP, ND and the experiment's own
// TCP control connections pass.
func (m Impairment) Rule(port string) *ImpairRule {
	if m.Zero() {
		return nil
	}
	r := &ImpairRule{Port: port, Direction: "egress", Match: "roce", Corrupt: m.Corrupt}
	if m.Burst > 0 && m.Loss > 0 {
		r.Burst = &ImpairBurst{Loss: m.Loss, Length: m.Burst}
	} else {
		r.Loss = m.Loss
	}
	return r
}

// Impair returns the impair section for a switch with impair sites; nil
// when nothing is impaired.
func (m Impairment) Impair(ports ...string) *ImpairConfig {
	if m.Zero() || len(ports) == 0 {
		return nil
	}
	c := &ImpairConfig{Seed: m.Seed}
	for _, p := range ports {
		c.Rules = append(c.Rules, *m.Rule(p))
	}
	return c
}

// Impair returns the options' impair section at one site, as
// tor/impair's own type, for validation.
func (o *Options) Impair(s Site) impair.Config {
	var c impair.Config
	if ic := o.Impairment().Impair(s.Port); ic != nil {
		if err := yamlRoundTrip(ic, &c); err != nil {
			panic(err) // our own types always encode
		}
	}
	return c
}

// yamlRoundTrip encodes v and decodes the result strictly into out.
func yamlRoundTrip(v, out any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return decodeStrict(b, out)
}

// TordConfigs returns each switch's configuration, by node name.
func (p *Plan) TordConfigs() map[string]*TordConfig {
	out := map[string]*TordConfig{}
	o := p.Options
	for _, n := range p.Switches() {
		c := &TordConfig{
			Ports:       p.Ports(n.Name),
			Workers:     1,
			Poll:        o.Poll,
			MetricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(o.MetricsPort)),
			AdminAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(o.MetricsPort+1)),
			LogLevel:    o.LogLevel,
		}
		c.XDP.Frames, c.XDP.RingSize = xdpSizes(len(c.Ports))
		c.Egress.Rate = o.Rate
		c.Forwarding.Multipath = o.Multipath
		var sites []string
		for _, s := range p.Sites {
			if s.Node == n.Name {
				sites = append(sites, s.Port)
			}
		}
		c.Impair = o.Impairment().Impair(sites...)
		out[n.Name] = c
	}
	return out
}

// SitePorts returns the impair ports of one switch.
func (p *Plan) SitePorts(node string) []string {
	var out []string
	for _, s := range p.Sites {
		if s.Node == node {
			out = append(out, s.Port)
		}
	}
	return out
}

// xdpSizes keeps tord's UMEM at 8192 frames of 4 KiB (32 MiB) where its
// defaults fit, and within 16384 frames otherwise: tord wants at least
// 2 × ring size × ports frames, so switches with many ports get smaller
// rings. Zero means tord's default.
func xdpSizes(ports int) (frames, ring int) {
	const defFrames, defRing = 8192, 2048
	if 2*defRing*ports <= defFrames {
		return 0, 0
	}
	ring = defRing
	for ring > 256 && 2*ring*ports > 16384 {
		ring /= 2
	}
	frames = defFrames
	for frames < 2*ring*ports {
		frames *= 2
	}
	return frames, ring
}

// Marshal returns the configuration as tord reads it, with a header.
func (c *TordConfig) Marshal(node string) ([]byte, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode tord config of %s: %w", node, err)
	}
	head := fmt.Sprintf("# tord configuration of switch %s, written by testbed (cmd/testbed).\n", node)
	return append([]byte(head), b...), nil
}

// decodeStrict decodes YAML into out, rejecting unknown fields as tord
// does.
func decodeStrict(b []byte, out any) error {
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	return d.Decode(out)
}
