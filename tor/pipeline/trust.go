package pipeline

import (
	"slices"

	"rocetor/tor/trust"
)

// TrustConfig is the trust: section: which ports face hosts the switch
// does not control, and which ports' PFC frames it honours
// (docs/operations.md, "Trust boundaries"). NetRT's peers are
// netrt.prefixes; llr's frames are accepted on llr.ports only.
type TrustConfig struct {
	// Hosts are the ports facing hosts: NetRT messages arriving on them
	// are dropped (trust_netrt_host). Empty: with a netrt: section, the
	// ports netrt.fabric does not name; without one, none.
	Hosts []string `yaml:"hosts"`
	// PFCPorts are the ports whose 802.1Qbb PFC and 802.3x PAUSE frames
	// pause their egress; the others' are dropped (trust_pfc). Absent:
	// every port, as before this key existed; [] honours none.
	PFCPorts *[]string `yaml:"pfc_ports"`
}

// hosts returns the host-facing ports of cfg, by index: trust.hosts, or
// the ports netrt.fabric leaves.
func (t *TrustConfig) HostPorts(cfg *Config) []bool {
	out := make([]bool, len(cfg.Ports))
	for i, p := range cfg.Ports {
		switch {
		case len(t.Hosts) > 0:
			out[i] = slices.Contains(t.Hosts, p)
		case cfg.NetRT.On():
			out[i] = !slices.Contains(cfg.NetRT.Fabric, p)
		}
	}
	return out
}

// refusePFC returns, by port index, the ports whose PFC frames are
// dropped; nil when every port honours them.
func (t *TrustConfig) RefusePFC(ports []string) []bool {
	if t.PFCPorts == nil {
		return nil
	}
	out := make([]bool, len(ports))
	for i, p := range ports {
		out[i] = !slices.Contains(*t.PFCPorts, p)
	}
	return out
}

// validate checks the section against the rest of the configuration.
func (t *TrustConfig) validate(cfg *Config) error {
	seen := map[string]bool{}
	for _, h := range t.Hosts {
		i := slices.Index(cfg.Ports, h)
		switch {
		case i < 0:
			return bad("trust.hosts", "%q is not one of ports", h)
		case seen[h]:
			return bad("trust.hosts", "%q named twice", h)
		case i >= trust.MaxPorts:
			return bad("trust.hosts", "%q is port %d; host ports must be among the first %d", h, i, trust.MaxPorts)
		case slices.Contains(cfg.NetRT.Fabric, h):
			return bad("trust.hosts", "%q is in netrt.fabric: a port faces hosts or the fabric, not both", h)
		case slices.Contains(cfg.LLR.Ports, h):
			return bad("trust.hosts", "%q is in llr.ports, a link to another switch: a port faces hosts or the fabric, not both", h)
		}
		seen[h] = true
	}
	if cfg.NetRT.On() && len(t.Hosts) > 0 {
		// NetRT serves as host ports those netrt.fabric leaves; a port
		// it serves as one must be guarded as one.
		for _, p := range cfg.Ports {
			if !slices.Contains(cfg.NetRT.Fabric, p) && !slices.Contains(t.Hosts, p) {
				return bad("trust.hosts", "%q is not in netrt.fabric, so NetRT serves it as a host port, but trust.hosts leaves it out", p)
			}
		}
	}
	if t.PFCPorts != nil {
		seen := map[string]bool{}
		for _, p := range *t.PFCPorts {
			if !slices.Contains(cfg.Ports, p) || seen[p] {
				return bad("trust.pfc_ports", "%q is not one of ports, or is named twice", p)
			}
			seen[p] = true
		}
	}
	return nil
}

// stageConfig is tor/trust's configuration for cfg.
func (t *TrustConfig) StageConfig(cfg *Config) trust.Config {
	c := trust.Config{NetRT: cfg.NetRT.On(), Peers: cfg.NetRT.Prefixes}
	for i, h := range t.HostPorts(cfg) {
		if h && i < trust.MaxPorts {
			c.Hosts |= 1 << i
		}
	}
	return c
}
