package netns

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"rocetor/tor/lab"
)

// mustPlan lays out a topology with its default options and prefix,
// edited.
func mustPlan(t *testing.T, topo string, edit func(*lab.Options)) *lab.Plan {
	t.Helper()
	o := lab.DefaultOptions(topo)
	o.Prefix = lab.DefaultPrefix(topo)
	if edit != nil {
		edit(&o)
	}
	p, err := lab.NewPlan(o)
	if err != nil {
		t.Fatalf("NewPlan(%s): %v", topo, err)
	}
	return p
}

// A multipath route is one command with a nexthop per path:
// ip route add … nexthop via … dev ….
func TestMultipathRouteCommand(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *lab.Options) { o.Paths = 3; o.Multipath = "spray" })
	var cmd string
	for _, c := range SetupCommands(p) {
		if s := c.String(); strings.HasPrefix(s, "ip -n rtb-multipath-tor2 route add 10.0.1.0/24") {
			cmd = s
		}
	}
	if want := "ip -n rtb-multipath-tor2 route add 10.0.1.0/24 nexthop via 10.2.1.1 dev core1 nexthop via 10.2.2.1 dev core2 nexthop via 10.2.3.1 dev core3"; cmd != want {
		t.Errorf("tor2's route command\n got %q\nwant %q", cmd, want)
	}
}

// Without --workers every veth end has one queue each way, as before the
// option.
func TestWorkersDefaultQueues(t *testing.T) {
	for _, topo := range lab.Topologies {
		for _, c := range SetupCommands(mustPlan(t, topo, nil)) {
			if slices.Contains(c, "veth") && strings.Count(c.String(), "queues 1") != 4 {
				t.Errorf("%s: %q: want one queue each way at both ends", topo, c)
			}
		}
	}
}

// Without --mgmt there is no management network to build.
func TestNoMgmtCommands(t *testing.T) {
	if c := MgmtCommands(mustPlan(t, "chain", nil)); len(c) != 0 {
		t.Errorf("without --mgmt: %q", c)
	}
}

// The management commands are the only ones that run in testbed's own
// namespace, and there they touch only the plan's host-end interfaces;
// the rest still names the plan's namespaces.
func TestMgmtCommandsTouchOnlyTheirInterfaces(t *testing.T) {
	for _, topo := range lab.Topologies {
		p := mustPlan(t, topo, func(o *lab.Options) { o.Mgmt = "198.19.80.0/24"; o.Paths = 4 })
		ns, hostIfs := map[string]bool{}, map[string]bool{}
		for _, n := range p.Nodes {
			ns[n.Netns] = true
		}
		for _, m := range p.Mgmt {
			hostIfs[m.HostIface] = true
		}
		if len(hostIfs) != len(p.Switches()) {
			t.Errorf("%s: %d host interfaces for %d switches", topo, len(hostIfs), len(p.Switches()))
		}
		for _, c := range MgmtCommands(p) {
			if c[1] == "-n" {
				if !ns[c[2]] || !slices.Contains(c, "mgmt") {
					t.Errorf("%s: %q: want one of the plan's namespaces and its mgmt interface", topo, c)
				}
				continue
			}
			touched := 0
			for _, a := range c {
				if hostIfs[a] {
					touched++
				}
			}
			if touched != 1 {
				t.Errorf("%s: %q runs in testbed's namespace but does not name exactly one of the plan's host interfaces", topo, c)
			}
			if i := slices.Index(c, "netns"); i >= 0 && (i+1 >= len(c) || !ns[c[i+1]]) {
				t.Errorf("%s: %q moves a veth end outside the plan", topo, c)
			}
			if slices.Contains(c, "route") {
				t.Errorf("%s: %q adds a route: the management network has only its connected /30s", topo, c)
			}
		}
	}
}

// up refuses a management network that another testbed has, or that
// overlaps the host's own addresses.
func TestMgmtFree(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2) to list the host's routes")
	}
	plan := func(mgmt string) *lab.Plan {
		return mustPlan(t, "link", func(o *lab.Options) { o.Mgmt = mgmt })
	}
	other := &lab.State{Name: "rtb-other", Plan: plan("198.19.81.0/24")}
	ctx := context.Background()
	if err := checkMgmtFree(ctx, plan("198.19.81.0/24"), []*lab.State{other}); err == nil || !strings.Contains(err.Error(), "rtb-other") {
		t.Errorf("the other testbed's network: %v, want refused naming it", err)
	}
	if err := checkMgmtFree(ctx, plan("127.0.0.0/24"), nil); err == nil || !strings.Contains(err.Error(), "the host's") {
		t.Errorf("inside the host's loopback network: %v, want refused", err)
	}
	if err := checkMgmtFree(ctx, plan("198.19.82.0/24"), []*lab.State{other}); err != nil {
		t.Errorf("a free network: %v", err)
	}
	if err := checkMgmtFree(ctx, plan(""), []*lab.State{other}); err != nil {
		t.Errorf("no management network: %v", err)
	}
}

// Every command names a namespace of the plan: testbed never touches the
// host's own interfaces or routes.
func TestSetupCommandsStayInNamespaces(t *testing.T) {
	for _, topo := range lab.Topologies {
		p := mustPlan(t, topo, nil)
		ns := map[string]bool{}
		for _, n := range p.Nodes {
			ns[n.Netns] = true
		}
		for _, c := range SetupCommands(p) {
			var target string
			switch {
			case len(c) > 3 && c[1] == "-n":
				target = c[2]
			case len(c) > 3 && c[1] == "netns" && (c[2] == "add" || c[2] == "exec"):
				target = c[3]
			}
			if !ns[target] {
				t.Errorf("%s: %q does not name one of the plan's namespaces", topo, c)
			}
			if slices.Contains(c, "netns") && c[1] == "-n" {
				// the peer end of a veth goes straight into its namespace
				i := slices.Index(c, "netns")
				if i+1 >= len(c) || !ns[c[i+1]] {
					t.Errorf("%s: %q moves a veth end outside the plan", topo, c)
				}
			}
		}
	}
}

func TestChainSwitchSysctls(t *testing.T) {
	p := mustPlan(t, "chain", nil)
	for _, c := range SetupCommands(p) {
		s := c.String()
		if !strings.Contains(s, "sysctl") {
			continue
		}
		sw := strings.Contains(s, "-tor") || strings.Contains(s, "-core")
		if fwdOff := strings.Contains(s, "net.ipv4.ip_forward=0"); fwdOff != sw {
			t.Errorf("%q: ip_forward=0 set %v, want %v (switch namespaces only)", s, fwdOff, sw)
		}
	}
}

// TestWorkersQueues: with --workers 2 the veths between switches have
// two queues each way at both ends, a host link two rx queues and one
// tx queue at the switch end and one of each at the host end.
func TestWorkersQueues(t *testing.T) {
	p := mustPlan(t, "chain", func(o *lab.Options) { o.Workers, o.LLR = 2, "blocking" })
	want := map[string]string{
		"tor1-h1":   "h1 numtxqueues 1 numrxqueues 2 type veth peer name eth0 numtxqueues 1 numrxqueues 1",
		"tor1-core": "core numtxqueues 2 numrxqueues 2 type veth peer name tor1 numtxqueues 2 numrxqueues 2",
		"core-tor2": "tor2 numtxqueues 2 numrxqueues 2 type veth peer name core numtxqueues 2 numrxqueues 2",
		"tor2-h2":   "h2 numtxqueues 1 numrxqueues 2 type veth peer name eth0 numtxqueues 1 numrxqueues 1",
	}
	n := 0
	for _, c := range SetupCommands(p) {
		if !slices.Contains(c, "veth") {
			continue
		}
		n++
		s := c.String()
		ok := false
		for _, w := range want {
			ok = ok || strings.Contains(s, "link add "+w+" netns")
		}
		if !ok {
			t.Errorf("%q: not one of %v", s, want)
		}
	}
	if n != len(want) {
		t.Errorf("%d veths, want %d", n, len(want))
	}
	for node, c := range p.TordConfigs() {
		if c.Workers != 2 {
			t.Errorf("%s: workers %d, want 2", node, c.Workers)
		}
	}
}
