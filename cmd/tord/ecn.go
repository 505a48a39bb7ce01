package main

import (
	"fmt"

	"rocetor/dataplane"
)

// ecnString describes a worker's profile for logs: Kmin/Kmax bytes and
// Pmax.
func ecnString(p dataplane.ECNProfile) string {
	if !p.On() {
		return "off"
	}
	return fmt.Sprintf("%d/%d/%.0f%%", p.MinBytes, p.MaxBytes, 100*p.PMax)
}
