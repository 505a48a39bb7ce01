package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"rocetor/tor/lab"
)

// DefaultStateDir holds one JSON file per testbed, and beside it a
// folder with its tord configurations, logs and binaries. /run is a
// tmpfs: a reboot, which also ends every namespace, empties it.
const DefaultStateDir = "/run/rocetor-testbed"

const stateVersion = 1

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
func createState(dir string, st *lab.State) error {
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
func saveState(dir string, st *lab.State) error {
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
func LoadState(dir, name string) (*lab.State, error) {
	b, err := os.ReadFile(StatePath(dir, name))
	if err != nil {
		return nil, fmt.Errorf("testbed %s: %w", name, err)
	}
	var st lab.State
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
func ListStates(dir string) (sts []*lab.State, errs []error) {
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
func removeState(dir string, st *lab.State) error {
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
