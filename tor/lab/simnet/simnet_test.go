package simnet

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"testing"

	"rocetor/tor/lab"
)

// runExp runs a catalogue experiment with args in the simulator.
func runExp(t *testing.T, name string, args ...string) *lab.Results {
	t.Helper()
	exp, ok := lab.Lookup(name)
	if !ok {
		t.Fatalf("no experiment %s", name)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	exp.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	env, closeFn, err := Default().Open(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	res := &lab.Results{Experiment: name, Params: map[string]string{}}
	if testing.Verbose() {
		env.Out = os.Stderr
	}
	if err := exp.Run(context.Background(), env, res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNetRTLoss(t *testing.T) {
	res := runExp(t, "netrt-loss", "--losses", "0.01", "--sizes", "100000", "--count", "20")
	b, _ := json.MarshalIndent(res.Cells, "", " ")
	t.Logf("%s", b)
}

func TestOthers(t *testing.T) {
	for _, c := range [][]string{
		{"sr-loss", "--losses", "0.01", "--count", "500"},
		{"dcp-loss", "--losses", "0.01"},
		{"llr-loss", "--losses", "1e-3"},
	} {
		t.Run(c[0], func(t *testing.T) {
			res := runExp(t, c[0], c[1:]...)
			b, _ := json.Marshal(res.Cells)
			t.Logf("%s", b)
		})
	}
}
