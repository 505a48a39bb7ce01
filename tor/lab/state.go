package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultStateDir holds one JSON file per testbed, and beside it a
// folder with its tord configurations, logs and binaries. /run is a
// tmpfs: a reboot, which also ends every namespace, empties it.
const DefaultStateDir = "/run/rocetor-testbed"

const stateVersion = 1

// State is what testbed knows about one testbed across invocations:
// written before the first namespace is created (so down finds a
// half-built testbed after a crash) and updated as it comes up.
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

// StateName is the name of the testbed with this prefix: the prefix
// without its trailing '-'.
func StateName(prefix string) string { return strings.TrimSuffix(prefix, "-") }

// StatePath is where the state of the testbed of this name is, in
// state folder dir.
func StatePath(dir, name string) string { return filepath.Join(dir, name+".json") }

// ErrExists is returned by createState when the testbed exists already.
var ErrExists = errors.New("testbed exists")

// createState writes a new state file, failing if one of that name
// exists: the file is also the lock against two ups of one name.
func createState(dir string, st *State) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	f, err := os.OpenFile(StatePath(dir, st.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s (testbed down --prefix %s- removes it)", ErrExists, StatePath(dir, st.Name), st.Name)
	}
	if err != nil {
		return fmt.Errorf("create state: %w", err)
	}
	f.Close()
	return saveState(dir, st)
}

// saveState replaces the state file atomically.
func saveState(dir string, st *State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := StatePath(dir, st.Name) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, StatePath(dir, st.Name)); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// LoadState reads one testbed's state.
func LoadState(dir, name string) (*State, error) {
	b, err := os.ReadFile(StatePath(dir, name))
	if err != nil {
		return nil, fmt.Errorf("testbed %s: %w", name, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("testbed %s: state %s: %w", name, StatePath(dir, name), err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("testbed %s: state version %d, want %d", name, st.Version, stateVersion)
	}
	return &st, nil
}

// ListStates reads every state in dir, sorted by name. Unreadable files
// are reported in errs and skipped.
func ListStates(dir string) (sts []*State, errs []error) {
	m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(m)
	for _, f := range m {
		st, err := LoadState(dir, strings.TrimSuffix(filepath.Base(f), ".json"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sts = append(sts, st)
	}
	return sts, errs
}

// removeState deletes a testbed's state file and folder.
func removeState(dir string, st *State) error {
	if st.Dir != "" && strings.HasPrefix(filepath.Clean(st.Dir), filepath.Clean(dir)+string(filepath.Separator)) {
		if err := os.RemoveAll(st.Dir); err != nil {
			return fmt.Errorf("remove %s: %w", st.Dir, err)
		}
	}
	if err := os.Remove(StatePath(dir, st.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove state: %w", err)
	}
	return nil
}

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
