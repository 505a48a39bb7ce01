package main

import (
	"regexp"
	"testing"

	"rocetor/cmd/tord/api"
)

// TestPortsStorms: torctl ports shows the PFC watchdog's storms per
// port, and how many priorities are stormed now.
func TestPortsStorms(t *testing.T) {
	ps := []api.Port{
		{Name: "h1", XDPMode: "native", PFCRx: 7},
		{Name: "h2", XDPMode: "native", PFCRx: 900, PFCWatchdogStorms: 2, PFCWatchdogRestores: 1},
	}
	out := torctlAgainst(t, "/api/v1/ports", ps, "ports")
	for _, re := range []string{
		`(?m)^PORT\s.*\sPFC TX\s+PFC STORMS\s+RX RING DROPS`,
		`(?m)^h1\s+native\s+0\s+0\s+0\s+0\s+7\s+0\s+0\s+0\s+0$`,
		`(?m)^h2\s+native\s+0\s+0\s+0\s+0\s+900\s+0\s+2 \(1 now\)\s+0\s+0$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no %s in\n%s", re, out)
		}
	}
}
