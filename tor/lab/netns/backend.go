package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"rocetor/tor/lab"
)

// Backend runs experiments on namespace testbeds (lab.Backend): it
// brings one up for each run and removes it afterwards, or runs on one
// that is up. The zero value builds tord and roceperf from the source
// tree the working directory is in and keeps its state in
// DefaultStateDir.
type Backend struct {
	StateDir string // the testbeds' state files; empty: DefaultStateDir
	Prefix   string // namespace name prefix; empty: lab.DefaultPrefix(topology)
	Bin      string // folder with built tord and roceperf; empty: build them
	Src      string // rocetor source tree to build from; empty: the one the working directory is in
	Reuse    bool   // run on the testbed with this prefix that is up, and leave it up as it was found
	Keep     bool   // leave the testbed up afterwards
	// Experiment names the experiment in messages; empty: "the
	// experiment".
	Experiment string
}

// Name is "testbed".
func (b *Backend) Name() string { return "testbed" }

// Open brings up the testbed o describes (or, with Reuse, gives the one
// that is up o's impairment) and returns its Env: the testbed as the
// Fabric, roceperf in the hosts' namespaces as the Perf. close removes
// the testbed, unless Keep, or restores a reused one's impairment.
func (b *Backend) Open(ctx context.Context, o lab.Options, out io.Writer) (env *lab.Env, close func() error, err error) {
	o.Prefix = b.Prefix
	if o.Prefix == "" {
		o.Prefix = lab.DefaultPrefix(o.Topology)
	}
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	stateDir := b.StateDir
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	src := b.Src
	if b.Bin == "" {
		// Fail before building anything if roceperf cannot be built.
		if src == "" {
			if src, err = FindModuleRoot(); err != nil {
				return nil, nil, err
			}
		}
		if _, err := os.Stat(filepath.Join(src, "cmd", "roceperf")); err != nil {
			return nil, nil, fmt.Errorf("%s needs roceperf, and %s has no cmd/roceperf yet: pass --bin DIR with tord and roceperf", b.experiment(), src)
		}
	}
	var tb *Testbed
	if b.Reuse {
		tb, close, err = b.reuse(ctx, stateDir, o, out)
	} else {
		tb, close, err = b.up(ctx, stateDir, o, src, out)
	}
	if err != nil {
		return nil, nil, err
	}
	if env, err = tb.Env(ctx, b.Bin, src); err != nil {
		return nil, nil, errors.Join(err, close())
	}
	return env, close, nil
}

func (b *Backend) experiment() string {
	if b.Experiment == "" {
		return "the experiment"
	}
	return b.Experiment
}

// reuse opens the testbed that is up and gives it o's impairment;
// close gives it back the one it had.
func (b *Backend) reuse(ctx context.Context, stateDir string, o lab.Options, out io.Writer) (*Testbed, func() error, error) {
	tb, err := Open(stateDir, o.Prefix, out)
	if err != nil {
		return nil, nil, err
	}
	if got := tb.Plan().Options.Topology; got != o.Topology {
		return nil, nil, lab.Usagef("--reuse: testbed %s is a %s, %s needs a %s", tb.st.Name, got, b.experiment(), o.Topology)
	}
	orig := tb.Impairment()
	restore := func() error {
		// Leave the reused testbed as it was found.
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tb.SetImpairment(rctx, orig); err != nil {
			return fmt.Errorf("restore impairment: %w", err)
		}
		return nil
	}
	if err := tb.SetImpairment(ctx, o.Impairment()); err != nil {
		return nil, nil, errors.Join(err, restore())
	}
	return tb, restore, nil
}

// up brings a testbed up; close removes it, unless Keep.
func (b *Backend) up(ctx context.Context, stateDir string, o lab.Options, src string, out io.Writer) (*Testbed, func() error, error) {
	tb, err := Up(ctx, o, UpConfig{StateDir: stateDir, Bin: b.Bin, Src: src, Out: out})
	if err != nil {
		return nil, nil, err
	}
	down := func() error {
		if b.Keep {
			fmt.Fprintf(out, "testbed: kept %s up (logs in %s); testbed down --prefix %s removes it\n", tb.st.Name, tb.st.Dir, o.Prefix)
			return nil
		}
		if err := tb.Down(); err != nil {
			return fmt.Errorf("tear down: %w", err)
		}
		return nil
	}
	return tb, down, nil
}
