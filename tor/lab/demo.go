package lab

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"
)

// demo is the one-command tour: the chain with 1 % loss at core, WRITEs
// from h1 to h2 with GBN endpoints, first with the ToRs forwarding only,
// then with NetRT on; the table of both, what each switch counted in the
// NetRT run and where its metrics are; everything removed at the end.
type demo struct{ netrtLoss }

func newDemo() *demo {
	d := &demo{*newNetRTLoss()}
	d.losses, d.sizes, d.count = "0.01", "65536", 200
	return d
}

func (d *demo) Name() string { return "demo" }
func (d *demo) Synopsis() string {
	return "the chain h1 — tor1 — core — tor2 — h2 with 1% loss at core: roceperf WRITEs with GBN endpoints, NetRT off and on, switch counters"
}

func (d *demo) Flags(fs *flag.FlagSet) {
	FabricFlags(fs, &d.opts, false)
	fs.StringVar(&d.losses, "loss", d.losses, "loss rate on core's link with tor2, both ways")
	fs.StringVar(&d.sizes, "size", d.sizes, "bytes per WRITE")
	fs.IntVar(&d.count, "count", d.count, "WRITEs with NetRT off, and again with it on")
	fs.StringVar(&d.hostRate, "host-rate", "", "roceperf's sending rate (default: the switches' --rate)")
	fs.DurationVar(&d.timeout, "timeout", time.Minute, "roceperf's --timeout")
}

func (d *demo) Run(ctx context.Context, env *Env, res *Results) error {
	st := env.Fabric.State()
	env.printf("\nEach switch's tord serves Prometheus metrics on loopback in its namespace:\n")
	for _, n := range env.Fabric.Plan().Switches() {
		sw := st.Switches[n.Name]
		env.printf("  %-5s pid %-7d %s\n", n.Name, sw.PID, sw.Curl())
	}
	env.printf("(or: testbed metrics --prefix %s- %s)\n\n", st.Name, "core")
	if err := d.netrtLoss.Run(ctx, env, res); err != nil {
		return err
	}
	n := len(res.Runs)
	if n == 0 || res.Runs[n-1].Switches == nil {
		return nil
	}
	env.printf("\nWhat each switch counted during the run with NetRT:\n")
	last := res.Runs[n-1]
	for _, sw := range env.Fabric.Plan().Switches() {
		s := last.Switches[sw.Name]
		var rx, tx []string
		for _, port := range env.Fabric.Plan().Ports(sw.Name) {
			l := fmt.Sprintf(`port="%s"`, port)
			rx = append(rx, fmt.Sprintf("%s %.0f", port, s.Sum("rocetor_port_rx_packets_total", l)))
			tx = append(tx, fmt.Sprintf("%s %.0f", port, s.Sum("rocetor_port_tx_packets_total", l)))
		}
		var drops []string
		for _, line := range s.Nonzero("rocetor_drops_total") {
			drops = append(drops, strings.TrimPrefix(line, "rocetor_drops_total"))
		}
		if len(drops) == 0 {
			drops = []string{"none"}
		}
		env.printf("  %-5s rx packets: %s; tx packets: %s; drops: %s\n", sw.Name,
			strings.Join(rx, ", "), strings.Join(tx, ", "), strings.Join(drops, ", "))
		if v := s.ImpairDrops(); v > 0 {
			env.printf("        impaired wire: %.0f frames destroyed (%.0f data, %.0f control)\n", v,
				s.Destroyed("data"), s.Destroyed("control"))
		}
		if v := s.Sum("rocetor_netrt_requests_sent_total"); v > 0 {
			env.printf("        NetRT: %.0f packets held out of order, %.0f requests sent to tor1\n",
				s.Sum("rocetor_netrt_held_total"), v)
		}
		if v := s.Sum("rocetor_netrt_retransmitted_total"); v > 0 || s.Sum("rocetor_netrt_pool_admitted_total") > 0 {
			env.printf("        NetRT: %.0f duplicates pooled, %.0f retransmitted from the pool, %.0f retired by ACKs\n",
				s.Sum("rocetor_netrt_pool_admitted_total"), v, s.Sum("rocetor_netrt_pool_retired_total", `cause="ack"`))
		}
	}
	return nil
}
