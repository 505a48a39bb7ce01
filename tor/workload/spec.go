package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// Names are the workloads a Spec names.
var Names = []string{"permutation", "incast", "alltoall", "allreduce", "sequence", "poisson", "file"}

// Spec names a workload and its parameters, as torsim's flags give
// them; Flows makes its flows for a fabric.
type Spec struct {
	Name string // one of Names
	// Size is the flow size of permutation, incast, alltoall,
	// allreduce and sequence.
	Size int
	// Incast is incast's senders, hosts 1 … Incast into host 0.
	Incast int
	// Count and Depth are sequence's messages from host 0 to the last
	// host and how many are in flight.
	Count, Depth int
	// CDF (websearch, datamining, hadoop or a file), Load (of each
	// host's link rate), Duration (how long flows arrive) and MaxSize (a
	// cap on sizes, 0 for none) are poisson's.
	CDF      string
	Load     float64
	Duration time.Duration
	MaxSize  int
	// Traffic is the file a "file" workload reads (Read's format).
	Traffic string
}

// Flows returns the workload's flows over hosts hosts whose links run
// at rateBps, drawing what is random from r.
func (s Spec) Flows(hosts int, rateBps uint64, r *rand.Rand) ([]Flow, error) {
	switch s.Name {
	case "permutation":
		return Permutation(hosts, s.Size, r), nil
	case "incast":
		var senders []int
		for i := 1; i <= min(s.Incast, hosts-1); i++ {
			senders = append(senders, i)
		}
		return Incast(senders, 0, s.Size), nil
	case "alltoall":
		return AllToAll(hosts, s.Size), nil
	case "sequence":
		return Sequence(0, hosts-1, s.Size, s.Count, s.Depth), nil
	case "allreduce":
		return RingAllReduce(hosts, s.Size), nil
	case "poisson":
		d, err := LoadCDF(s.CDF)
		if err != nil {
			return nil, err
		}
		return Poisson(hosts, d, s.Load, rateBps, int64(s.Duration), s.MaxSize, r), nil
	case "file":
		f, err := os.Open(s.Traffic)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return Read(f)
	}
	return nil, fmt.Errorf("workload %q: want one of %v", s.Name, Names)
}
