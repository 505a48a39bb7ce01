package fabric

import (
	"fmt"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/pipeline"
	"rocetor/tor/topo"
)

// TestSamePipeline: every switch the simulator builds is the pipeline
// tord builds from the same YAML. The switch's configuration is written
// out as tord's configuration file, read back as tord reads it
// (pipeline.ParseConfig, Validate), and built by pipeline.Plan over
// in-memory ports as tord's tests do: the stages in order with their
// configurations, the ports' wrappers, the egress of every port and
// the forwarding stage's configuration must be the same.
func TestSamePipeline(t *testing.T) {
	tmpl := `
ecn: {mark: dequeue}
forwarding: {multipath: adaptive}
netrt: {fabric: [fabric]}
trim: {ports: [fabric]}
llr: {ports: [fabric]}
pfc: {xoff: 64KiB, xon: 32KiB, ports: [hosts]}
impair:
  rules: [{port: fabric, direction: egress, match: roce, loss: 0.001}]
`
	tp := topo.Chain(1, topo.DefaultTiers())
	n, err := Build(tp, Options{Seed: 9, Switch: tmpl, Transport: "dcp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range n.Switches {
		y, err := yaml.Marshal(s.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := pipeline.ParseConfig(y, s.Name+".yaml")
		if err != nil {
			t.Fatalf("%s: tord cannot read the switch's YAML: %v\n%s", s.Name, err, y)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: tord refuses the switch's YAML: %v", s.Name, err)
		}
		mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
		if err != nil {
			t.Fatal(err)
		}
		var ports []dataplane.Port
		for i, name := range cfg.Ports {
			ports = append(ports, dataplane.NewMemPort(name, rocev2.MAC{2, 0, 0, 0, 0, byte(i)}, mem, 64))
		}
		pn, err := pipeline.NewPlan(&cfg, &fwd.FIB{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := pn.Build(0, mem, ports, func() int64 { return 0 })
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describe(s.Pipe), describe(pl); got != want {
			t.Errorf("%s: the simulator's pipeline\n%s\ntord's\n%s", s.Name, got, want)
		}
		ge, _ := s.Cfg.EgressConfigs()
		we, _ := cfg.EgressConfigs()
		if !reflect.DeepEqual(ge, we) {
			t.Errorf("%s: egress differs:\n%+v\n%+v", s.Name, ge, we)
		}
		gf, _ := pipeline.FwdConfig(&s.Cfg)
		wf, _ := pipeline.FwdConfig(&cfg)
		if !reflect.DeepEqual(gf, wf) {
			t.Errorf("%s: fwd config differs: %+v, %+v", s.Name, gf, wf)
		}
	}
}

// describe names a pipeline's stages, their configurations (NetRT's
// without its route callback, which reads each switch's own FIB) and
// its ports' wrappers.
func describe(pl *pipeline.Pipeline) string {
	out := ""
	for _, st := range pl.Stages {
		out += st.Name() + " "
	}
	out += fmt.Sprintf("| trust %+v", pl.Trust.Config())
	if c, ok := pl.Worker.IngressPFC(); ok {
		out += fmt.Sprintf(" | pfc %+v", c)
	}
	if pl.Src != nil {
		c := pl.Src.Config()
		c.Route = nil
		out += fmt.Sprintf(" | netrt %+v", c)
	}
	if pl.Trim != nil {
		out += fmt.Sprintf(" | trim %+v", pl.Trim.Config())
	}
	if pl.LLR != nil {
		out += fmt.Sprintf(" | llr %+v", pl.LLR.Config())
	}
	for _, p := range pl.Ports {
		out += " | " + p.Name()
		// The wrappers; under them the port itself, which is the
		// simulator's or an in-memory one.
		for q := p; q != nil; {
			u, ok := q.(dataplane.Wrapper)
			if !ok {
				break
			}
			out += fmt.Sprintf(" %T", q)
			q = u.Inner()
		}
	}
	return out
}
