package pipeline

import "rocetor/tor/inband"

// INTConfig is the int: section: in-band telemetry for HPCC
// (tor/inband). The stage stamps a record into every RoCEv2 frame that
// carries an INT request tail (rocev2/int.go) as it is queued at one of
// the ports named here:
//
//	int:
//	  ports: [s1, s2]   # egress ports that stamp; empty or absent = all
type INTConfig struct {
	// Ports are the egress ports that stamp INT records; empty, every
	// port.
	Ports []string `yaml:"ports"`
}

// validate checks the section against the rest of the configuration.
func (c *INTConfig) validate(cfg *Config) error {
	if c == nil {
		return nil
	}
	if _, err := inband.PortMask(c.Ports, cfg.Ports); err != nil {
		return bad("int.ports", "%v", err)
	}
	return nil
}

// stage returns the stage the section describes.
func (c *INTConfig) stage(cfg *Config) (*inband.Stage, error) {
	m, err := inband.PortMask(c.Ports, cfg.Ports)
	if err != nil {
		return nil, bad("int.ports", "%v", err)
	}
	return inband.NewStage(inband.Config{Ports: m}), nil
}
