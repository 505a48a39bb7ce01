package lab

import (
	"fmt"
	"time"
)

// State is what testbed knows about one testbed across invocations:
// written before the first namespace is created (so down finds a
// half-built testbed after a crash) and updated as it comes up. The
// namespace backend (package netns) keeps it as a JSON file per testbed;
// experiments read it through Fabric.State.
type State struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`  // the prefix without its trailing '-'
	Phase   string    `json:"phase"` // creating, up
	Created time.Time `json:"created"`
	Owner   int       `json:"owner_pid"` // the testbed process that built it
	Dir     string    `json:"dir"`       // configurations, logs, built binaries
	Bin     string    `json:"bin"`       // where tord (and roceperf) are
	Plan    *Plan     `json:"plan"`
	// Impairment is what the impair sites do now (experiments change it).
	Impairment Impairment              `json:"impairment"`
	Switches   map[string]*SwitchState `json:"switches"`
}

// SwitchState is one switch's tord.
type SwitchState struct {
	Netns      string `json:"netns"`
	PID        int    `json:"pid,omitempty"`
	Config     string `json:"config"`      // YAML file
	Log        string `json:"log"`         // tord's stdout and stderr
	MetricsURL string `json:"metrics_url"` // inside Netns
}

// Curl is the command that reads the switch's metrics from the host.
func (s *SwitchState) Curl() string {
	return fmt.Sprintf("ip netns exec %s curl -s %s", s.Netns, s.MetricsURL)
}

// Phases.
const (
	PhaseCreating = "creating"
	PhaseUp       = "up"
)

// Netns returns the testbed's namespace names.
func (st *State) Netns() []string {
	var out []string
	if st.Plan != nil {
		for _, n := range st.Plan.Nodes {
			out = append(out, n.Netns)
		}
	}
	return out
}
