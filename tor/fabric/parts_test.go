package fabric

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// threadsRun runs flows over shape with o on threads goroutines and
// returns result.json's bytes and the flow file's.
func threadsRun(t *testing.T, shape string, o Options, flows []workload.Flow, until sim.Time, threads int) (res, file []byte, n *Network) {
	t.Helper()
	ti := topo.DefaultTiers()
	ti.HostRate, ti.FabricRate = 25e9, 25e9
	tp, err := topo.Parse(shape, ti)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxQPs, o.Threads = QPsNeeded(flows, 1), threads
	if n, err = Build(tp, o); err != nil {
		t.Fatal(err)
	}
	r, err := n.Run(flows, RunOptions{Until: until})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, r)
	var f bytes.Buffer
	if err := r.WriteFlows(&f); err != nil {
		t.Fatal(err)
	}
	if res, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	return res, f.Bytes(), n
}

// TestThreadsIdentical: a run on 2 and 4 partitions (sim.Group) writes
// the very result.json and flow file one thread does, on a fat tree
// (a permutation, every flow at 0; a Poisson load, flows posted
// between windows; DCQCN over ECN with llr on every link, the hosts'
// too, and loss) and on a leaf-spine with loss on fabric links and
// PFC (retransmissions, pauses crossing partitions), with jitter on
// every port, to the end of the flows and to a time limit mid-run; and the partitions did cut links
// and run in parallel.
func TestThreadsIdentical(t *testing.T) {
	d, err := workload.LoadCDF("websearch")
	if err != nil {
		t.Fatal(err)
	}
	perm := workload.Permutation(16, 256<<10, rand.New(rand.NewPCG(3, 3)))
	poisson := workload.Poisson(16, d, 0.6, 25e9, 2e6, 200<<10, rand.New(rand.NewPCG(4, 4)))
	pfc := "pfc: {xoff: 32KiB, xon: 16KiB}\n"
	cases := []struct {
		name, shape string
		o           Options
		flows       []workload.Flow
		until       sim.Time
		acted       []string // host counters that must have moved, "pfc" the pause frames
	}{
		{"fattree-permutation", "fattree:k=4", Options{Seed: 1}, perm, 0, nil},
		{"fattree-poisson", "fattree:k=4", Options{Seed: 2, Switch: pfc}, poisson, 0, []string{"pfc"}},
		{"leafspine-loss-pfc", "leafspine:leaves=4,spines=2,hosts=4", Options{Seed: 3, Transport: "irn", Switch: pfc + lossy}, poisson, 0,
			[]string{"Retransmits", "pfc"}},
		{"fattree-dcqcn-llr", "fattree:k=4", Options{Seed: 4, Transport: "irn", CC: "dcqcn", Switch: "ecn: {}\nllr: {ports: [all]}\n" + lossy}, poisson, 0,
			[]string{"CNPsRecv"}},
		{"leafspine-jitter", "leafspine:leaves=4,spines=2,hosts=4", Options{Seed: 5, Transport: "irn", Jitter: 100, Switch: lossy}, poisson, 0,
			[]string{"Retransmits"}},
		{"leafspine-until", "leafspine:leaves=4,spines=2,hosts=4", Options{Seed: 3, Transport: "irn", Switch: pfc + lossy}, poisson, 700 * sim.Microsecond, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res1, file1, _ := threadsRun(t, c.shape, c.o, c.flows, c.until, 1)
			// The mechanisms the case is for did act.
			var r struct {
				Hosts map[string]int64 `json:"host_counters"`
				PFC   int64            `json:"pfc_frames"`
			}
			if err := json.Unmarshal(res1, &r); err != nil {
				t.Fatal(err)
			}
			r.Hosts["pfc"] = r.PFC
			for _, k := range c.acted {
				if r.Hosts[k] == 0 {
					t.Errorf("no %s: the case does not test what it is for", k)
				}
			}
			for _, k := range []int{2, 4} {
				res, file, n := threadsRun(t, c.shape, c.o, c.flows, c.until, k)
				if n.Partitions() != k || n.group.Lookahead == sim.Never || n.Parallelism() < 1.3 {
					t.Errorf("%d threads: %d partitions, lookahead %d, parallelism %.2f", k, n.Partitions(), n.group.Lookahead, n.Parallelism())
				}
				if !bytes.Equal(res, res1) {
					t.Errorf("%d threads: result.json differs from one thread's:\n%s", k, firstDiff(res1, res))
				}
				if !bytes.Equal(file, file1) {
					t.Errorf("%d threads: the flow file differs from one thread's:\n%s", k, firstDiff(file1, file))
				}
			}
		})
	}
}

// firstDiff shows where two outputs part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-120)
	return "one:   …" + string(a[lo:min(len(a), i+120)]) + "\nother: …" + string(b[lo:min(len(b), i+120)])
}

// TestThreadsRefused: what a run on several partitions cannot do
// exactly is refused with a clear error, not run differently: a flow
// that starts when another completes (it may start on another
// partition at that very time), a SEND workload.
func TestThreadsRefused(t *testing.T) {
	tp, err := topo.Parse("fattree:k=4", topo.DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	flows := []workload.Flow{{Src: 0, Dst: 15, Size: 4096, After: -1}, {Src: 15, Dst: 0, Size: 4096, After: 0}}
	n, err := Build(tp, Options{Threads: 2, MaxQPs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Run(flows, RunOptions{}); err == nil || !strings.Contains(err.Error(), "starts when flow 0 completes") {
		t.Errorf("dependent flows on 2 threads: %v", err)
	}
}

// TestPartition: a fat tree is cut by pods, each pod's ToRs,
// aggregation switches and hosts in one partition, the cores spread
// over both; its lookahead is the fabric links' delay.
func TestPartition(t *testing.T) {
	tp := fatTree(t)
	part := partition(tp, 2)
	count := make([]int, 2)
	for i, nd := range tp.Nodes {
		count[part[i]]++
		if strings.HasPrefix(nd.Name, "tor0") || strings.HasPrefix(nd.Name, "agg0") || strings.HasPrefix(nd.Name, "tor1") || strings.HasPrefix(nd.Name, "agg1") {
			if part[i] != 0 {
				t.Errorf("%s in partition %d, want 0 (pods 0 and 1)", nd.Name, part[i])
			}
		}
		if strings.HasPrefix(nd.Name, "tor3") || strings.HasPrefix(nd.Name, "agg3") {
			if part[i] != 1 {
				t.Errorf("%s in partition %d, want 1 (pod 3)", nd.Name, part[i])
			}
		}
	}
	if count[0] != count[1] {
		t.Errorf("partitions of %v nodes, want equal", count)
	}
	if la := lookahead(tp, part); la != topo.DefaultTiers().FabricDelay {
		t.Errorf("lookahead %d, want the fabric delay %d", la, topo.DefaultTiers().FabricDelay)
	}
}
