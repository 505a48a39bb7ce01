package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"rocetor/tor/lab"
	"rocetor/tor/lab/simnet"
)

// cmdRun runs an experiment of the catalogue in the simulator: the
// same experiment testbed runs on namespaces, with the same flags and
// the same results. --against RECORD runs the record's cells (its
// experiment flags first, the command line's over them) and sets the
// record beside the simulator's results.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runExperiment(ctx, "run", args, stdout, stderr)
}

// cmdMergeRun is "torsim merge-run EXPERIMENT [flags] --cells DIR,…":
// the experiment's record from the cells its shards wrote (shard.go).
func cmdMergeRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runExperiment(ctx, "merge-run", args, stdout, stderr)
}

// runExperiment is torsim run (verb "run") and merge-run.
func runExperiment(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return lab.Usagef("torsim %s EXPERIMENT [flags]; torsim list shows the experiments", verb)
	}
	entry, ok := lab.Find(args[0])
	switch {
	case !ok:
		return lab.Usagef("unknown experiment %q; torsim list shows %s", args[0], strings.Join(lab.Names(), ", "))
	case entry.NoSim != "":
		return lab.Usagef("%s runs on namespaces only (testbed run %s): %s", entry.Name, entry.Name, entry.NoSim)
	}
	exp := entry.New()
	b := simnet.Default()
	out := lab.Output{Out: stdout, Stdout: stdout, Command: "torsim " + verb + " " + strings.Join(args, " ")}
	var against string
	var cf cellFlags
	fs := flag.NewFlagSet("torsim "+verb+" "+exp.Name(), flag.ContinueOnError)
	fs.SetOutput(stderr)
	out.Flags(fs)
	b.Flags(fs)
	fs.StringVar(&against, "against", "", "a record of this experiment (testbed run --record) to run the cells of and set beside the simulator's")
	cf.flags(fs, verb == "merge-run")
	exp.Flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return lab.Usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return lab.Usagef("unexpected argument %q", fs.Arg(0))
	}
	if b.Jitter < 0 {
		return lab.Usagef("--jitter %v: want none or a positive spread", b.Jitter)
	}
	var rec *lab.Results
	if against != "" {
		var err error
		if rec, err = lab.ReadResults(against); err != nil {
			return err
		}
		if rec.Experiment != exp.Name() {
			return lab.Usagef("--against %s is a record of %s, not %s", against, rec.Experiment, exp.Name())
		}
		// The record's cells, then what this command line says.
		if err := fs.Parse(append(lab.RecordedFlags(exp, rec.Command), args[1:]...)); err != nil {
			return lab.Usagef("%s's flags: %v", against, err)
		}
	}
	if _, err := exp.Setup(); err != nil {
		return err
	}
	if out.JSON == "-" {
		out.Out = stderr
	}
	backend, err := cf.backend(b, exp, fs, verb == "merge-run")
	if err != nil {
		return err
	}
	res, err := lab.RunExperiment(ctx, exp, backend, out)
	if err != nil || rec == nil {
		return err
	}
	return compare(exp, res, rec, against, out)
}

// compare prints the simulator's cells beside the record's and, with
// --md, adds the table to the Markdown file.
func compare(exp lab.Experiment, res, rec *lab.Results, against string, out lab.Output) error {
	var cols []string
	if c, ok := exp.(lab.Comparable); ok {
		cols = c.Compared()
	}
	t, err := lab.Compare(res, rec, cols)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## The simulator beside %s\n\n", against)
	fmt.Fprintf(&b, "Simulated: `%s`.\nRecorded on %s (%d CPUs, %s): `%s`.\n\n", res.Command, rec.Machine.Kernel, rec.Machine.CPUs, rec.Started.Format("2006-01-02 15:04 UTC"), rec.Command)
	t.Markdown(&b)
	fmt.Fprint(out.Out, b.String())
	if out.MD == "" {
		return nil
	}
	f, err := os.OpenFile(out.MD, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
