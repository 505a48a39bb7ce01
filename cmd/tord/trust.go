package main

import "fmt"

// describeTrust says what the boundaries are, for the start-up log.
func describeTrust(cfg *Config) string {
	var hosts []string
	for i, h := range cfg.Trust.HostPorts(cfg) {
		if h {
			hosts = append(hosts, cfg.Ports[i])
		}
	}
	pfc := "every port"
	if p := cfg.Trust.PFCPorts; p != nil {
		pfc = fmt.Sprint(*p)
	}
	return fmt.Sprintf("host ports %v, NetRT peers %v, llr frames on %v, PFC honoured on %s", hosts, cfg.NetRT.Prefixes, cfg.LLR.Ports, pfc)
}
