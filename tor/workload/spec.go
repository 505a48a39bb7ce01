package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// Names are the generators a Spec names; several joined by "+"
// ("poisson+incast") run together.
var Names = []string{"permutation", "incast", "sequential-incast", "alltoall", "allreduce", "sequence", "poisson", "file"}

// Spec names a workload and its parameters, as torsim's flags give
// them; Flows makes its flows for a fabric. A Spec of several
// generators (Name "a+b", or Parts) runs each with the same parameters
// (Parts: each its own) and concatenates their flows in order.
type Spec struct {
	// Name is one of Names, or several joined by "+".
	Name string
	// Size is the flow size of permutation, incast, alltoall and
	// sequence, and each host's data in allreduce (a ring step's chunk
	// is Size/N).
	Size int
	// Groups, when not empty, runs alltoall and allreduce in each group
	// of a layout (LayoutRail, LayoutRack: Groups over Racks), all
	// groups at once, instead of once over every host.
	Groups string
	// Incast is incast's and sequential-incast's senders (default
	// incast: hosts 1 … Incast into host 0).
	Incast int
	// IncastFrom is where incast senders are: "same" (the receiver's
	// rack first, then the hosts after it in host order: hosts 1 … N
	// into host 0, as before), "racks" (hosts of other racks only) or
	// "any" (any host but the receiver). Empty: "same" for incast,
	// "racks" for sequential-incast, "any" for an incast beside
	// background traffic (Background). "racks" and "any" draw the
	// senders from r, round-robin over racks for "racks".
	IncastFrom string
	// IncastTo is the receiver, a host index; -1 draws one per burst
	// from r. Zero with Background: drawn per burst too (DCP §6.2).
	IncastTo int
	// IncastSize is each incast flow's size (0: Size; sequential-incast
	// 500 KB, NetRT §IV-B).
	IncastSize int
	// IncastPeriod repeats an incast every period while the time is
	// below Duration (0: one burst). For sequential-incast it is the gap
	// between one sender's start and the next's (0: 10 µs, NetRT §IV-B).
	IncastPeriod time.Duration
	// IncastLoad, when above 0, times incast bursts as Poisson arrivals
	// for Duration so that the incast offers this load of the hosts'
	// total link rate (DCP §6.2: 128-to-1 incast at 5% average load
	// beside WebSearch at 50%); it overrides IncastPeriod.
	IncastLoad float64
	// Racks is the rack (ToR) of each host, by host index; nil: one rack.
	Racks []int
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
	// Start delays every flow this Spec posts at a time (not those
	// that wait for another's completion) by Start.
	Start time.Duration
	// Parts, when not empty, are the generators this Spec runs instead
	// of Name: a workload file's entries (ReadSpecs).
	Parts []Spec
	// Background is set on the incast of a composition that also
	// runs poisson (Flows sets it): the incast then picks receivers and
	// senders as DCP's mixed workload does.
	Background bool
}

// Flows returns the workload's flows over hosts hosts whose links run
// at rateBps, drawing what is random from r. The generators of a
// composition draw from r one after another, in order, so the first
// draws as it would alone.
func (s Spec) Flows(hosts int, rateBps uint64, r *rand.Rand) ([]Flow, error) {
	parts := s.Parts
	if len(parts) == 0 {
		names := strings.Split(s.Name, "+")
		if len(names) == 1 {
			return s.one(hosts, rateBps, r)
		}
		bg := false
		for _, n := range names {
			bg = bg || n == "poisson"
		}
		for _, n := range names {
			p := s
			p.Name, p.Background = n, bg
			parts = append(parts, p)
		}
	}
	var out []Flow
	for i, p := range parts {
		if p.Parts != nil || strings.Contains(p.Name, "+") {
			return nil, fmt.Errorf("workload: part %d (%s): a workload file's entry names one generator", i+1, p.Name)
		}
		fl, err := p.one(hosts, rateBps, r)
		if err != nil {
			return nil, fmt.Errorf("workload: part %d (%s): %w", i+1, p.Name, err)
		}
		out = appendFlows(out, fl)
	}
	return out, nil
}

// one returns the flows of one generator, delayed by Start.
func (s Spec) one(hosts int, rateBps uint64, r *rand.Rand) ([]Flow, error) {
	fl, err := s.gen(hosts, rateBps, r)
	if err != nil || s.Start == 0 {
		return fl, err
	}
	for i := range fl {
		if fl[i].After < 0 {
			fl[i].Start += s.Start.Nanoseconds()
		}
	}
	return fl, nil
}

func (s Spec) gen(hosts int, rateBps uint64, r *rand.Rand) ([]Flow, error) {
	switch s.Name {
	case "permutation":
		return Permutation(hosts, s.Size, r), nil
	case "incast":
		return s.incast(hosts, rateBps, r)
	case "sequential-incast":
		return s.sequentialIncast(hosts, r)
	case "alltoall", "allreduce":
		return s.collective(hosts)
	case "sequence":
		return Sequence(0, hosts-1, s.Size, s.Count, s.Depth), nil
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
	return nil, fmt.Errorf("workload %q: want one of %v, or several joined by +", s.Name, Names)
}

// collective is alltoall (Size a flow) or allreduce (Size a host's
// data) over every host, or in each of the Groups.
func (s Spec) collective(hosts int) ([]Flow, error) {
	groups := [][]int{firstHosts(hosts)}
	if s.Groups != "" {
		racks := s.Racks
		if racks == nil {
			racks = make([]int, hosts)
		}
		if len(racks) != hosts {
			return nil, fmt.Errorf("workload: %d hosts, racks of %d", hosts, len(racks))
		}
		var err error
		if groups, err = Groups(racks, s.Groups); err != nil {
			return nil, err
		}
	}
	size := s.Size
	if s.Name == "alltoall" {
		// Collective cuts a host's data into a slice per member.
		for _, g := range groups {
			if len(g) != len(groups[0]) {
				return nil, fmt.Errorf("workload: alltoall groups of unequal size")
			}
		}
		size *= len(groups[0])
	}
	return Collective(groups, s.Name, size)
}

// appendFlows appends fl to out, its After indexes (which count from
// fl's first flow) renumbered to count from out's.
func appendFlows(out, fl []Flow) []Flow {
	base := len(out)
	for _, f := range fl {
		if f.After >= 0 {
			f.After += base
		}
		out = append(out, f)
	}
	return out
}
