package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"rocetor/tor/lab"
)

// Status is what testbed status reports: the testbeds whose state is in
// a folder and the namespaces none of them claims. Its JSON is testbed
// status --json.
type Status struct {
	Orphans  []string      `json:"orphan_netns"` // namespaces with the prefix no state claims
	Testbeds []StatusEntry `json:"testbeds"`
}

// StatusEntry is one testbed of a Status.
type StatusEntry struct {
	*lab.State
	Missing []string `json:"missing_netns,omitempty"` // namespaces of the plan that are gone
	Dead    []string `json:"dead_tord,omitempty"`     // switches whose tord is not running
}

// ReadStatus reads the testbeds whose state is in stateDir (only the one
// with this prefix, if not empty), checks that their namespaces and
// tords are there, and lists the namespaces with the prefix (rtb- if
// empty) that no state claims. The error joins the state files it could
// not read; the Status holds the rest.
func ReadStatus(stateDir, prefix string) (*Status, error) {
	sts, errs := ListStates(stateDir)
	s := &Status{}
	claimed := map[string]bool{}
	for _, st := range sts {
		if prefix != "" && st.Name+"-" != prefix {
			continue
		}
		e := StatusEntry{State: st}
		for _, n := range st.Netns() {
			claimed[n] = true
			if _, err := os.Stat(netnsDir + "/" + n); err != nil {
				e.Missing = append(e.Missing, n)
			}
		}
		for node, sw := range st.Switches {
			if sw.PID == 0 || !Alive(sw.PID) {
				e.Dead = append(e.Dead, node)
			}
		}
		sort.Strings(e.Dead)
		s.Testbeds = append(s.Testbeds, e)
	}
	if prefix == "" {
		prefix = "rtb-"
	}
	stray, _ := ListNetns(prefix)
	for _, n := range stray {
		if !claimed[n] {
			s.Orphans = append(s.Orphans, n)
		}
	}
	return s, errors.Join(errs...)
}

// Print describes every testbed of the status and the orphans, as
// testbed status prints them.
func (s *Status) Print(w io.Writer, stateDir string) {
	if len(s.Testbeds) == 0 {
		fmt.Fprintf(w, "no testbed in %s\n", stateDir)
	}
	for _, e := range s.Testbeds {
		Describe(w, e.State)
		if len(e.Missing) > 0 {
			fmt.Fprintf(w, "  MISSING namespaces: %s\n", strings.Join(e.Missing, " "))
		}
		if len(e.Dead) > 0 {
			fmt.Fprintf(w, "  tord NOT RUNNING on: %s\n", strings.Join(e.Dead, " "))
		}
		fmt.Fprintln(w)
	}
	if len(s.Orphans) > 0 {
		fmt.Fprintf(w, "namespaces no state claims (left by a crash? testbed down removes them): %s\n", strings.Join(s.Orphans, " "))
	}
}

// Describe describes one testbed: shape, nodes, addresses, switches.
func Describe(w io.Writer, st *lab.State) {
	p := st.Plan
	fmt.Fprintf(w, "%s: %s %s, %s since %s (state %s)\n", st.Name, p.Options.Topology, p.Shape(), st.Phase,
		st.Created.Local().Format(time.DateTime), st.Dir)
	imp := "none"
	if m := st.Impairment; !m.Zero() {
		imp = fmt.Sprintf("loss %g", m.Loss)
		if m.Burst > 0 {
			imp += fmt.Sprintf(" in bursts of %g", m.Burst)
		}
		if m.Corrupt > 0 {
			imp += fmt.Sprintf(", corrupt %g", m.Corrupt)
		}
		if m.Skew > 0 {
			imp += fmt.Sprintf(", delay k × %v at site k", m.Skew)
		}
		arrow := "↔" // loss and corruption both ways
		if m.OneWay || m.Loss == 0 && m.Corrupt == 0 {
			arrow = "→"
		}
		var sites []string
		for _, s := range p.Sites {
			sites = append(sites, s.Node+arrow+s.Port)
		}
		imp += " at " + strings.Join(sites, ", ")
	}
	netrt := ""
	if p.Options.NetRT {
		netrt = "; NetRT on tor1, tor2"
	}
	fmt.Fprintf(w, "  switch egress %s%s, multipath %s, poll %s; impairment: %s%s\n", p.Options.Rate, p.Options.Congestion(),
		p.Options.Multipath, p.Options.Poll, imp, netrt)
	if d := p.DescribeWorkers(); d != "" {
		fmt.Fprintf(w, "  %s\n", d)
	}
	if p.Options.Mgmt != "" {
		fmt.Fprintf(w, "  management network %s: a veth from the host to each switch, tord's metrics on the switch's end\n", p.Options.Mgmt)
	}
	for _, n := range p.Nodes {
		if n.Kind != lab.HostNode {
			continue
		}
		a := p.Addr(n.Name).String()
		if a6 := p.Addr6(n.Name); a6.IsValid() {
			a += " " + a6.String()
		}
		fmt.Fprintf(w, "  host   %-6s netns %-22s %s\n", n.Name, n.Netns, a)
	}
	for _, n := range p.Switches() {
		sw := st.Switches[n.Name]
		if sw == nil {
			fmt.Fprintf(w, "  switch %-6s netns %-22s (no tord yet)\n", n.Name, n.Netns)
			continue
		}
		pid := "not running"
		if sw.PID != 0 && Alive(sw.PID) {
			pid = "pid " + strconv.Itoa(sw.PID)
		}
		fmt.Fprintf(w, "  switch %-6s netns %-22s tord %s, ports %s\n", n.Name, n.Netns, pid, strings.Join(p.Ports(n.Name), ","))
		if m := p.MgmtOf(n.Name); m != nil {
			fmt.Fprintf(w, "         mgmt: %s %s (host) — %s %s (switch)\n", m.HostIface, m.HostAddr, m.Iface, m.Addr)
			fmt.Fprintf(w, "         metrics: curl -s %s\n", sw.MetricsURL)
			continue
		}
		fmt.Fprintf(w, "         metrics: %s\n", sw.Curl())
	}
}

// PickState returns the testbed with this prefix, or with an empty one
// the only testbed there is.
func PickState(stateDir, prefix string) (*lab.State, error) {
	if prefix != "" {
		return LoadState(stateDir, StateName(prefix))
	}
	sts, _ := ListStates(stateDir)
	switch len(sts) {
	case 0:
		return nil, fmt.Errorf("no testbed is up (state in %s)", stateDir)
	case 1:
		return sts[0], nil
	}
	var names []string
	for _, st := range sts {
		names = append(names, st.Name+"-")
	}
	return nil, lab.Usagef("several testbeds are up; name one with --prefix: %s", strings.Join(names, " "))
}

// ScrapeSwitch reads a switch's rocetor_ metrics from the host, whether
// or not this process started its tord.
func ScrapeSwitch(ctx context.Context, st *lab.State, node string) (lab.Sample, error) {
	sw := st.Switches[node]
	if sw == nil {
		return nil, lab.Usagef("testbed %s has no switch %q", st.Name, node)
	}
	s, err := scrape(ctx, netnsClient(sw.Netns, 5*time.Second), sw.MetricsURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", node, err)
	}
	return s, nil
}
