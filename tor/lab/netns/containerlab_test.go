package netns

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"rocetor/tor/lab"
)

// The containerlab lab in deploy/containerlab is testbed's chain,
// generated from the same plan: the tord configurations are what testbed
// writes, and each node's exec list is testbed's setup commands for that
// namespace. This test regenerates the files and fails if they differ;
// -update writes them:
//
//	go test ./tor/lab/netns -run TestContainerlab -update

var update = flag.Bool("update", false, "rewrite deploy/containerlab from testbed's plan")

// clabOptions is the testbed the lab reproduces: testbed up chain --netrt
// --loss 0.01, the chain of the demo's NetRT half.
func clabOptions() lab.Options {
	o := lab.DefaultOptions("chain")
	o.Prefix = lab.DefaultPrefix("chain")
	o.NetRT = true
	o.Loss = 0.01
	return o
}

const clabDir = "../../../deploy/containerlab"

// clabFiles returns every file of the lab by name: the topology and one
// tord configuration per switch.
func clabFiles(t *testing.T) map[string][]byte {
	t.Helper()
	p, err := lab.NewPlan(clabOptions())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for node, c := range p.TordConfigs() {
		b, err := lab.MarshalTordConfig(node, c)
		if err != nil {
			t.Fatal(err)
		}
		files[node+".yaml"] = b
	}
	topo, err := clabTopology(p)
	if err != nil {
		t.Fatal(err)
	}
	files["chain.clab.yml"] = topo
	return files
}

// clabTopology writes the plan as a containerlab topology: a linux node
// per namespace, a link per veth pair, and as each node's exec list the
// plan's setup commands for its namespace with the namespace taken off,
// then tord on the switches and a roceperf server on the receivers.
func clabTopology(p *lab.Plan) ([]byte, error) {
	byNetns := map[string]string{}
	for _, n := range p.Nodes {
		byNetns[n.Netns] = n.Name
	}
	exec := map[string][]string{}
	for _, c := range SetupCommands(p) {
		switch {
		case len(c) > 3 && c[0] == "ip" && c[1] == "netns" && c[2] == "add":
			// The container is the namespace.
		case len(c) > 4 && c[0] == "ip" && c[1] == "netns" && c[2] == "exec":
			node := byNetns[c[3]]
			exec[node] = append(exec[node], strings.Join(c[4:], " "))
		case len(c) > 4 && c[0] == "ip" && c[1] == "-n" && slices.Contains(c, "veth"):
			// A link: containerlab makes the pair. testbed gives each end
			// one queue; so does ethtool -L on containerlab's veths.
			a, b := byNetns[c[2]], byNetns[c[len(c)-1]]
			ai, bi := c[5], c[slices.Index(c, "name")+1]
			exec[a] = append(exec[a], "ethtool -L "+ai+" rx 1 tx 1")
			exec[b] = append(exec[b], "ethtool -L "+bi+" rx 1 tx 1")
		case len(c) > 3 && c[0] == "ip" && c[1] == "-n":
			node := byNetns[c[2]]
			exec[node] = append(exec[node], "ip "+strings.Join(c[3:], " "))
		default:
			return nil, fmt.Errorf("setup command %q has no containerlab form: teach clabTopology", c)
		}
	}
	var b bytes.Buffer
	b.WriteString(`# rocetor's chain h1 — tor1 — core — tor2 — h2 as a containerlab lab: the
# topology of ` + "`testbed up chain --netrt --loss 0.01`" + ` (docs/testbed.md), with
# NetRT on tor1 and tor2 and 1% loss of RoCEv2 frames from core to tor2.
# Generated from testbed's plan by
#   go test ./tor/lab/netns -run TestContainerlab -update
# which also checks it, with tor1.yaml, core.yaml and tor2.yaml beside it
# (the files testbed writes): edit tor/lab and tor/lab/netns, not these files.
#
# The image is deploy/container/Dockerfile's lab stage (tord, roceperf,
# iproute2, ethtool, ping, curl):
#   docker build -f deploy/container/Dockerfile --target lab -t rocetor/lab .
#   sudo containerlab deploy -t deploy/containerlab/chain.clab.yml
#   docker exec clab-rocetor-chain-h1 ping -c 3 10.0.2.2        # resolves the neighbours
#   docker exec clab-rocetor-chain-h1 roceperf write --dev eth0 --to 10.0.2.2 --size 1MiB --count 20
#   docker exec clab-rocetor-chain-tor2 curl -s 127.0.0.1:9478/metrics | grep rocetor_netrt_
#   sudo containerlab destroy -t deploy/containerlab/chain.clab.yml
#
# Every node has network-mode none: no management interface, so the hosts'
# interface is eth0 and the switches' ports are named after their
# neighbours, as in testbed. containerlab runs its nodes privileged, which
# covers tord's capabilities. tord logs to /var/log/tord.log in its node.
name: rocetor-chain
topology:
  defaults:
    kind: linux
    image: rocetor/lab:latest
    network-mode: none
    cmd: sleep infinity
  nodes:
`)
	for _, n := range p.Nodes {
		fmt.Fprintf(&b, "    %s:\n", n.Name)
		cmds := exec[n.Name]
		if n.Kind == lab.SwitchNode {
			fmt.Fprintf(&b, "      binds:\n        - %s.yaml:/etc/rocetor/tord.yaml:ro\n", n.Name)
			cmds = append(cmds, "sh -c 'setsid -f tord --config /etc/rocetor/tord.yaml >/var/log/tord.log 2>&1'")
		}
		if n.Role == lab.RoleReceiver {
			listen := fmt.Sprintf("%s:%d", p.Addr(n.Name), roceperfPort)
			cmds = append(cmds, "sh -c 'setsid -f roceperf serve --dev eth0 --listen "+listen+" >/var/log/roceperf.log 2>&1'")
		}
		b.WriteString("      exec:\n")
		for _, c := range cmds {
			fmt.Fprintf(&b, "        - %s\n", c)
		}
	}
	b.WriteString("  links:\n")
	for _, l := range p.Links {
		fmt.Fprintf(&b, "    - endpoints: [\"%s:%s\", \"%s:%s\"]\n", l.A.Node, l.A.Iface, l.B.Node, l.B.Iface)
	}
	return b.Bytes(), nil
}

func TestContainerlab(t *testing.T) {
	files := clabFiles(t)
	if *update {
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(clabDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(clabDir, name))
		if err != nil {
			t.Fatalf("%v (go test ./tor/lab/netns -run TestContainerlab -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/containerlab/%s differs from what testbed's plan gives; regenerate with go test ./tor/lab/netns -run TestContainerlab -update", name)
		}
	}
	// What the lab starts is what testbed starts: the switches' configs
	// are bound where tord is told to read them.
	var topo struct {
		Topology struct {
			Nodes map[string]struct {
				Binds []string `yaml:"binds"`
				Exec  []string `yaml:"exec"`
			} `yaml:"nodes"`
			Links []struct {
				Endpoints []string `yaml:"endpoints"`
			} `yaml:"links"`
		} `yaml:"topology"`
	}
	if err := yaml.Unmarshal(files["chain.clab.yml"], &topo); err != nil {
		t.Fatalf("chain.clab.yml: %v", err)
	}
	p, _ := lab.NewPlan(clabOptions())
	if len(topo.Topology.Nodes) != len(p.Nodes) || len(topo.Topology.Links) != len(p.Links) {
		t.Errorf("%d nodes, %d links; the plan has %d, %d", len(topo.Topology.Nodes), len(topo.Topology.Links), len(p.Nodes), len(p.Links))
	}
	for _, n := range p.Switches() {
		node := topo.Topology.Nodes[n.Name]
		if !slices.Contains(node.Binds, n.Name+".yaml:/etc/rocetor/tord.yaml:ro") {
			t.Errorf("%s: binds %q, want its tord config", n.Name, node.Binds)
		}
	}
}
