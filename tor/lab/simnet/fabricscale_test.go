package simnet

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"rocetor/tor/lab"
)

// fabricRuns indexes a fabric-scale experiment's runs by their point's
// values joined: "irn/none/-".
func fabricRuns(t *testing.T, res *lab.Results, keys ...string) map[string]*lab.FabricRun {
	t.Helper()
	out := map[string]*lab.FabricRun{}
	for i := range res.Runs {
		r := &res.Runs[i]
		if r.Error != "" || r.Fabric == nil {
			t.Fatalf("%v: %s", r.Point, r.Error)
		}
		k := ""
		for j, key := range keys {
			if j > 0 {
				k += "/"
			}
			k += r.Point[key]
		}
		out[k] = r.Fabric
		if r.Fabric.Completed != r.Fabric.Flows {
			t.Errorf("%s: %d of %d flows completed", k, r.Fabric.Completed, r.Fabric.Flows)
		}
	}
	return out
}

// TestIRNFabricCI is irn-fabric at --scale ci (1 ms of arrivals on the
// seed's k = 6 fat tree, 236 flows): what rocetor shows of the seed's
// claims at that scale (docs/experiments.md, Fabric scale). RoCE
// requires PFC (§4.2.3): without it, with no window cap, go-back-N
// drops, times out and is worse on every metric. IRN without PFC is no
// worse than RoCE with PFC on mean slowdown (§4.2.1) — on p99 FCT it is
// 3 % worse at this scale, where RoCE's PFC has little to spread. The
// RoCE window is the parameter issue 29 found: with IRN's 110-packet
// cap RoCE + PFC never pauses; without it, it does. Of IRN's ablations
// (§4.3, Fig. 7) the one this scale shows is BDP-FC's: without its cap
// IRN drops 25 % of its data instead of 0.15 %, and is worse on average.
func TestIRNFabricCI(t *testing.T) {
	res := runResults(t, "irn-fabric", "--scale", "ci", "--schemes", "irn,roce+pfc,roce,irn-nobdpfc", "--gbn-window", "0,110")
	runs := fabricRuns(t, res, "scheme", "gbn_window")
	irn, pfc, pfc110, lossy := runs["irn/-"], runs["roce+pfc/none"], runs["roce+pfc/110"], runs["roce/none"]
	if nofc := runs["irn-nobdpfc/-"]; nofc.Drop() <= irn.Drop() || nofc.All.MeanSlowdown <= irn.All.MeanSlowdown || nofc.All.MeanFCTNs <= irn.All.MeanFCTNs {
		t.Errorf("IRN without BDP-FC: %v drops, slowdown %.3f, FCT %.0f ns; with it %v, %.3f, %.0f: want more drops and worse",
			nofc.Drop(), nofc.All.MeanSlowdown, nofc.All.MeanFCTNs, irn.Drop(), irn.All.MeanSlowdown, irn.All.MeanFCTNs)
	}
	for _, m := range []struct {
		name string
		f    func(*lab.FabricRun) float64
	}{{"mean slowdown", func(f *lab.FabricRun) float64 { return f.All.MeanSlowdown }},
		{"mean FCT", func(f *lab.FabricRun) float64 { return f.All.MeanFCTNs }},
		{"p99 FCT", func(f *lab.FabricRun) float64 { return float64(f.All.P99FCTNs) }}} {
		if a, b := m.f(lossy), m.f(pfc); a <= b {
			t.Errorf("%s: RoCE without PFC %.0f, with PFC %.0f: want worse without", m.name, a, b)
		}
	}
	if lossy.Drop() == 0 || lossy.HostCounters["Retransmits"] == 0 {
		t.Errorf("RoCE without PFC: %v drops, %d retransmits: want both", lossy.Drop(), lossy.HostCounters["Retransmits"])
	}
	if a, b := irn.All.MeanSlowdown, pfc.All.MeanSlowdown; a > b {
		t.Errorf("mean slowdown: IRN %.3f, RoCE + PFC %.3f: want IRN no worse", a, b)
	}
	// Each cell keeps its slowest flows and splits its flows by whether
	// they timed out: RoCE without PFC times out often, IRN seldom.
	if len(lossy.Slowest) == 0 || lossy.Classes["timed out"].Flows == 0 || irn.Classes["timed out"].Flows*10 > lossy.Classes["timed out"].Flows {
		t.Errorf("slowest flows %d, flows timed out without PFC %d, IRN's %d: want some, some, a tenth at most",
			len(lossy.Slowest), lossy.Classes["timed out"].Flows, irn.Classes["timed out"].Flows)
	}
	if pfc.PFCFrames == 0 || pfc110.PFCFrames != 0 {
		t.Errorf("RoCE + PFC paused %d times without a window cap, %d with 110 packets: want some, then none", pfc.PFCFrames, pfc110.PFCFrames)
	}
}

// TestIRNFabricTimelyDelta checks that --timely-delta reaches the hosts'
// TIMELY: with δ at 40 Mbit/s instead of the TIMELY paper's 10 the same
// flows finish sooner (the rate climbs back four times as fast after
// each cut), and the record says which δ it ran with.
func TestIRNFabricTimelyDelta(t *testing.T) {
	args := []string{"--scale", "ci", "--schemes", "irn+pfc", "--cc", "timely"}
	base := fabricRuns(t, runResults(t, "irn-fabric", args...), "scheme")["irn+pfc"]
	res := runResults(t, "irn-fabric", append(args, "--timely-delta", "40")...)
	if res.Params["timely_delta"] != "40" {
		t.Errorf("record's parameters %v: want timely_delta=40", res.Params)
	}
	if fast := fabricRuns(t, res, "scheme")["irn+pfc"]; fast.All.MeanFCTNs >= base.All.MeanFCTNs {
		t.Errorf("mean FCT with δ 40 Mbit/s %.0f ns, with 10 %.0f: want shorter", fast.All.MeanFCTNs, base.All.MeanFCTNs)
	}
}

// TestIRNFabricFlags checks that --host-burst, --qps and --pfc-xon reach
// the hosts and switches: each changes the same flows' completion times
// in a cell that pauses, and the record names it.
func TestIRNFabricFlags(t *testing.T) {
	args := []string{"--scale", "ci", "--schemes", "roce+pfc", "--gbn-window", "0"}
	base := fabricRuns(t, runResults(t, "irn-fabric", args...), "scheme")["roce+pfc"]
	if base.PFCFrames == 0 {
		t.Fatal("RoCE + PFC uncapped never paused: the cell shows nothing of --pfc-xon")
	}
	for _, f := range []struct{ flag, value, param string }{
		{"--host-burst", "4", "host_burst"}, {"--qps", "4", "qps"}, {"--pfc-xon", "110KB", "pfc_xon"}} {
		res := runResults(t, "irn-fabric", append(args, f.flag, f.value)...)
		if res.Params[f.param] != f.value {
			t.Errorf("%s %s: record's parameters %v: want %s=%s", f.flag, f.value, res.Params, f.param, f.value)
		}
		if r := fabricRuns(t, res, "scheme")["roce+pfc"]; r.All.MeanFCTNs == base.All.MeanFCTNs {
			t.Errorf("%s %s: mean FCT %.0f ns, as without: want the flows to run differently", f.flag, f.value, r.All.MeanFCTNs)
		}
	}
}

// TestDCPFabricCI is dcp-fabric at --scale ci (4 leaves, 4 spines, 32
// hosts; WebSearch at 0.5 for 200 µs, and the same with 16-to-1 incasts
// at 5 % load, with and without DCQCN): what rocetor shows of the
// seed's claims (docs/experiments.md, dcp-fabric). The 32 MiB buffers
// drop nothing, so every IRN retransmission under adaptive routing is
// spurious (Fig. 1: each arrives as a duplicate), IRN with ECMP resends
// nothing, and DCP resends exactly what the switches trimmed, with no
// duplicate at a receiver; no header-only packet is lost at any incast
// (Table 5). Without congestion control DCP has the worst tail under
// incast (Fig. 16c). With DCQCN's rate-derived marking (Kmin 400 KB at
// 100 Gbit/s) DCP's queues never reach Kmin — trimming holds them at
// 64 KiB — so DCQCN never acts on DCP: rocetor's DCP + DCQCN is DCP
// alone, unlike Fig. 16d (the test fails the day a mark is made).
func TestDCPFabricCI(t *testing.T) {
	res := runResults(t, "dcp-fabric", "--scale", "ci", "--loads", "0.5")
	runs := fabricRuns(t, res, "workload", "scheme", "cc")
	for k, r := range runs {
		if r.Drop() != 0 {
			t.Errorf("%s: %v drops in 32 MiB buffers", k, r.Drop())
		}
		if strings.Contains(k, "/dcp/") {
			if tr := r.Stages["trim"]["Ports.Trimmed"]; int64(r.HostCounters["Retransmits"]) != tr || r.HostCounters["Duplicates"] != 0 {
				t.Errorf("%s: DCP resent %d, trimmed %d, %d duplicates: want what was trimmed, none spurious",
					k, r.HostCounters["Retransmits"], tr, r.HostCounters["Duplicates"])
			}
		}
	}
	for _, cc := range []string{"none", "dcqcn"} {
		d, ar, ecmp := runs["incast/dcp/"+cc], runs["incast/irn-ar/"+cc], runs["incast/irn-ecmp/"+cc]
		if d.Stages["trim"]["Ports.Trimmed"] == 0 || d.HODrops != 0 {
			t.Errorf("incast, cc %s: DCP trimmed %d, lost %d header-only packets: want some, none lost", cc, d.Stages["trim"]["Ports.Trimmed"], d.HODrops)
		}
		if n := ar.HostCounters["Retransmits"]; n == 0 || ar.HostCounters["Duplicates"] != n {
			t.Errorf("incast, cc %s: IRN + AR resent %d, %d of them duplicates: want some, all spurious", cc, n, ar.HostCounters["Duplicates"])
		}
		if n := ecmp.HostCounters["Retransmits"]; n != 0 {
			t.Errorf("incast, cc %s: IRN + ECMP resent %d with nothing lost or reordered", cc, n)
		}
	}
	if d, ar := runs["incast/dcp/none"], runs["incast/irn-ar/none"]; d.All.P99Slowdown <= ar.All.P99Slowdown {
		t.Errorf("incast without CC: P99 slowdown DCP %.2f, IRN + AR %.2f: the seed's Fig. 16c has DCP worst", d.All.P99Slowdown, ar.All.P99Slowdown)
	}
	if d := runs["incast/dcp/dcqcn"]; d.ECNMarked != 0 {
		t.Errorf("DCP + DCQCN: %d ECN marks: trimming no longer keeps the queues below Kmin; update the docs' finding", d.ECNMarked)
	}
}

// TestDCPFabricRetransQ is dcp-fabric's one DCP incast cell at --scale
// ci with a RetransQ of one entry a QP (--retransq 1): the flag reaches
// the hosts' NICs, whose RetransQ now overflows, and every header-only
// packet lost is lost there (dcp_retransq_full), none in the network. At
// nic/dcp's default of 256 the same cell loses none (TestDCPFabricCI);
// at paper scale 256 overflows (docs/experiments.md, dcp-fabric).
func TestDCPFabricRetransQ(t *testing.T) {
	res := runResults(t, "dcp-fabric", "--scale", "ci", "--schemes", "dcp", "--workloads", "incast", "--cc", "none", "--retransq", "1")
	r := fabricRuns(t, res, "scheme")["dcp"]
	if full := r.HODropsBy["host:dcp_retransq_full"]; full == 0 || full != r.HODrops {
		t.Errorf("RetransQ of 1: %d header-only packets lost (%v): want some, all at the hosts' full RetransQ", r.HODrops, r.HODropsBy)
	}
}

// TestDCPFabricWindow is dcp-fabric's DCP WebSearch cell at --scale ci,
// load 0.5, seed 1, with a send window (--dcp-window 110): the flag
// reaches the hosts' NICs, whose receivers now acknowledge arrivals as
// they come (about one ACK a data packet, against one a message without
// a window), and every flow completes with no coarse timeout.
func TestDCPFabricWindow(t *testing.T) {
	args := []string{"--scale", "ci", "--schemes", "dcp", "--workloads", "websearch", "--loads", "0.5", "--seeds", "1"}
	off := fabricRuns(t, runResults(t, "dcp-fabric", args...), "scheme")["dcp"]
	on := fabricRuns(t, runResults(t, "dcp-fabric", append(args, "--dcp-window", "110")...), "scheme")["dcp"]
	for _, r := range []*lab.FabricRun{off, on} {
		if r.Completed != r.Flows || r.HostCounters["Timeouts"] != 0 {
			t.Errorf("%d of %d flows completed, %d timeouts", r.Completed, r.Flows, r.HostCounters["Timeouts"])
		}
	}
	if req := on.HostCounters["Requests"]; on.HostCounters["AcksSent"] < req/2 || off.HostCounters["AcksSent"] > int64(off.Flows) {
		t.Errorf("ACKs sent: %d for %d requests with the window, %d for %d flows without: want one a batch of arrivals with, one a message without",
			on.HostCounters["AcksSent"], req, off.HostCounters["AcksSent"], off.Flows)
	}
}

// TestFabricScaleRefusesTestbed: a backend that is not the simulator
// (the namespace testbed) refuses a fabric-scale experiment, saying why;
// the catalogue marks both as the simulator's alone.
func TestFabricScaleRefusesTestbed(t *testing.T) {
	for _, name := range []string{"irn-fabric", "netrt-incast", "fasr-scale", "llr-fabric", "dcp-fabric", "netrt-fabric", "netrt-multipath-fabric"} {
		e, ok := lab.Find(name)
		if !ok || e.NoTestbed == "" || e.NoSim != "" {
			t.Fatalf("%s's entry: %+v", name, e)
		}
		_, err := lab.RunExperiment(context.Background(), e.New(), notSim{}, lab.Output{})
		if !errors.Is(err, lab.ErrUsage) || !strings.Contains(err.Error(), "simulator only") {
			t.Errorf("%s on a backend that is not the simulator: %v", name, err)
		}
	}
}

// notSim is a backend that is not the simulator.
type notSim struct{}

func (notSim) Name() string { return "testbed" }
func (notSim) Open(context.Context, lab.Options, io.Writer) (*lab.Env, func() error, error) {
	return nil, nil, errors.New("opened")
}

// TestNetRTIncastCI is netrt-incast at 15 senders (--scale ci --senders
// 15): what rocetor shows of Fig. 8. PFC and IRN both beat GBN on the
// lossy fabric, neither resending anything end to end (the seed: PFC
// 25-35 % better on average FCT, IRN better still). NetRT on every ToR
// does request and resend from its pool, at line rate and paced (its
// congestion avoidance, §III-B 3), but does not keep the hosts from
// retransmitting as the seed says it does: the core's full queue drops
// most of each burst, the destination ToR sees few gaps, and the
// hosts' go-back-N times out and resends (docs/experiments.md, Fabric
// scale, netrt-incast). The day NetRT recovers these losses this test
// fails on its last check, which should then assert the seed's claim.
func TestNetRTIncastCI(t *testing.T) {
	res := runResults(t, "netrt-incast", "--scale", "ci", "--senders", "15")
	runs := fabricRuns(t, res, "scheme")
	gbn, pfc, irn, nrt := runs["gbn"], runs["gbn+pfc"], runs["irn"], runs["gbn+netrt"]
	if gbn.Drop() == 0 || gbn.HostCounters["Retransmits"] == 0 {
		t.Fatalf("lossy GBN: %v drops, %d retransmits: the incast does not congest", gbn.Drop(), gbn.HostCounters["Retransmits"])
	}
	for name, r := range map[string]*lab.FabricRun{"gbn+pfc": pfc, "irn": irn} {
		if r.All.MeanFCTNs >= gbn.All.MeanFCTNs || r.HostCounters["Retransmits"] != 0 {
			t.Errorf("%s: mean FCT %.0f ns (lossy GBN %.0f), %d retransmits: want better, none",
				name, r.All.MeanFCTNs, gbn.All.MeanFCTNs, r.HostCounters["Retransmits"])
		}
	}
	if pfc.PFCFrames == 0 {
		t.Errorf("gbn+pfc sent no pause")
	}
	src := nrt.Stages["netrt_src"]
	if src["Ports.Requests"] == 0 || src["Ports.Retrans"] == 0 || src["Ports.Paced"] == 0 {
		t.Errorf("NetRT: %d requests, %d resent at line rate, %d paced: want each", src["Ports.Requests"], src["Ports.Retrans"], src["Ports.Paced"])
	}
	if nrt.HostCounters["Retransmits"] == 0 {
		t.Errorf("behind NetRT the hosts retransmitted nothing: NetRT now recovers the incast's losses; assert the seed's claim here")
	}
	// How the losses came to light at the destination ToR
	// (docs/experiments.md, netrt-incast): few as gaps it could ask
	// for; more beyond the 128-PSN bitmap, or as a flow's first
	// packets, lost before its entry began (named only by the host's
	// NAK); a third or more never, no later packet of their sender's
	// pass reaching the ToR before the sender went back N.
	dst := nrt.Stages["netrt_dst"]
	drops := int64(nrt.Drops["queue_full"])
	shown := dst["Ports.MissRequested"] + dst["Ports.MissBeyond"] + dst["Ports.MissWaited"] +
		dst["Ports.MissPassed"] + dst["Ports.MissFull"] + dst["Ports.MissDelivered"]
	unshown := drops - shown - dst["Ports.MissNAKed"]
	if asked := dst["Ports.MissRequested"] + dst["Ports.MissWaited"]; asked*20 > drops ||
		dst["Ports.MissBeyond"] <= asked || dst["Ports.MissNAKed"] == 0 || unshown*3 < drops || dst["Ports.GoBacks"] == 0 {
		t.Errorf("NetRT: of %d drops, %d shown as gaps asked for, %d beyond the bitmap, %d named by NAKs, %d never shown; %d go-backs: "+
			"want under 5 %% asked for, more beyond, some NAKed, a third or more never shown, go-backs seen",
			drops, asked, dst["Ports.MissBeyond"], dst["Ports.MissNAKed"], unshown, dst["Ports.GoBacks"])
	}
}

// TestNetRTIncastNetRTFlag: netrt-incast's --netrt reaches the ToRs'
// NetRT section and the record: with K_l and K_h out of reach nothing is
// paced or paused, where the defaults pace and pause at 15 senders
// (TestNetRTIncastCI).
func TestNetRTIncastNetRTFlag(t *testing.T) {
	const yaml = "k_low: 64MiB, k_high: 128MiB"
	res := runResults(t, "netrt-incast", "--scale", "ci", "--senders", "15", "--schemes", "gbn+netrt", "--netrt", yaml)
	if res.Params["netrt"] != yaml {
		t.Errorf("record's parameters %v: want netrt=%q", res.Params, yaml)
	}
	src := fabricRuns(t, res, "scheme")["gbn+netrt"].Stages["netrt_src"]
	if src["Ports.Paced"] != 0 || src["Ports.Pauses"] != 0 || src["Ports.Retrans"] == 0 {
		t.Errorf("thresholds out of reach: paced %d, paused %d, resent %d at line rate: want 0, 0, some",
			src["Ports.Paced"], src["Ports.Pauses"], src["Ports.Retrans"])
	}
}

// TestNetRTFabricCI is netrt-fabric at --scale ci with GBN + NetRT
// (the seed's 512-server fabric, 0.5 ms of WebSearch arrivals, ECMP):
// what rocetor shows of Fig. 10. The fabric loses packets where ECMP
// puts several large flows on one core's link toward a ToR (lossy GBN
// on the same flows, docs/experiments.md netrt-fabric: 798 lost, 6,059
// resent). NetRT asks for the losses but cannot answer: the source
// ToR's pool (256 KiB per fabric port, the seed's one BDP of a 5 µs
// round trip) has evicted the duplicates by the time the gap, behind a
// core queue of up to 1 MiB, reaches the destination ToR, so every
// request goes unfulfilled and the hosts' go-back-N recovers. The seed
// claims no end-to-end retransmission; the day NetRT achieves it here
// this test fails on its last check, which should then assert it.
//
// One cell: a second 512-server network in the same process pays for
// clearing the first one's frame memory (issue 30), several GB and
// minutes; lossy GBN's figures are the docs' record.
func TestNetRTFabricCI(t *testing.T) {
	res := runResults(t, "netrt-fabric", "--scale", "ci", "--schemes", "gbn+netrt")
	nrt := fabricRuns(t, res, "scheme")["gbn+netrt"]
	if nrt.Drops["queue_full"] == 0 {
		t.Fatalf("GBN + NetRT: nothing lost: the fabric does not lose")
	}
	src := nrt.Stages["netrt_src"]
	if src["Ports.Requests"] == 0 || src["Ports.Evicted"] == 0 || src["Ports.Unfulfill"] != src["Ports.Requests"] {
		t.Errorf("NetRT: %d requests, %d unfulfilled, %d duplicates evicted: want requests, all unfulfilled, evictions",
			src["Ports.Requests"], src["Ports.Unfulfill"], src["Ports.Evicted"])
	}
	// Full to within a frame: the pool's budget is 256 KiB per port.
	if o := nrt.NetRT; o == nil || o.PoolPeakBytes < 256<<10-2048 || o.PoolMeanBytes <= 0 {
		t.Errorf("NetRT's pool occupancy %+v: want a port's pool full at its peak", o)
	}
	if nrt.HostCounters["Retransmits"] == 0 {
		t.Errorf("behind NetRT the hosts retransmitted nothing: NetRT now recovers the fabric's losses; assert the seed's claim here")
	}
}

// TestNetRTMultipathFabricCI is netrt-multipath-fabric at --scale ci
// with spraying and NetRT (the seed's Fig. 9 claim on the Fig. 10
// fabric): spraying every packet over the four cores loses nothing but
// reorders (GBN without NetRT resends 716 packets for it, the docs'
// record); with NetRT on every ToR the destination ToR's reordering
// buffer holds the early packets until the late ones arrive, and the
// hosts resend nothing (Table III: 5.1 end-to-end retransmissions per
// 100 KB without NetRT, 0 with). One cell, as TestNetRTFabricCI.
func TestNetRTMultipathFabricCI(t *testing.T) {
	res := runResults(t, "netrt-multipath-fabric", "--scale", "ci", "--multipath", "spray", "--schemes", "gbn+netrt")
	nrt := fabricRuns(t, res, "scheme")["gbn+netrt"]
	dst := nrt.Stages["netrt_dst"]
	if dst["Ports.Gaps"] == 0 || dst["Ports.Held"] == 0 || dst["Ports.Released"] == 0 {
		t.Fatalf("GBN + NetRT sprayed: %d gaps, %d packets held, %d released: want the reordering seen and absorbed",
			dst["Ports.Gaps"], dst["Ports.Held"], dst["Ports.Released"])
	}
	if nrt.Drops["queue_full"] != 0 || nrt.HostCounters["Retransmits"] != 0 {
		t.Errorf("GBN + NetRT sprayed: %d lost, %d e2e retransmits: want none of either", nrt.Drops["queue_full"], nrt.HostCounters["Retransmits"])
	}
	if o := nrt.NetRT; o == nil || o.ReorderPeakBytes == 0 {
		t.Errorf("NetRT's occupancy %+v: want the reordering buffer used", o)
	}
}

// TestNetRTMultipathFabricNetRTFlag: --netrt reaches the ToRs' NetRT
// section (the one-change runs of docs/experiments.md,
// netrt-multipath-fabric, "At the seed's fabric"). The ci cell sprayed
// with NetRT at its defaults pauses senders (10 PFC frames, the docs'
// record); with K_l and K_h out of reach (no congestion avoidance, as
// five-way's --netrt) NetRT neither paces nor pauses and resends every
// request at line rate. One cell, as TestNetRTFabricCI.
func TestNetRTMultipathFabricNetRTFlag(t *testing.T) {
	const yaml = "k_low: 64MiB, k_high: 128MiB"
	res := runResults(t, "netrt-multipath-fabric", "--scale", "ci", "--multipath", "spray", "--schemes", "gbn+netrt", "--netrt", yaml)
	if res.Params["netrt"] != yaml {
		t.Errorf("record's parameters %v: want netrt=%q", res.Params, yaml)
	}
	nrt := fabricRuns(t, res, "scheme")["gbn+netrt"]
	src := nrt.Stages["netrt_src"]
	if src["Ports.Paced"] != 0 || src["Ports.Pauses"] != 0 || nrt.PFCFrames != 0 || src["Ports.Retrans"] == 0 {
		t.Errorf("thresholds out of reach: paced %d, paused %d (%d PFC frames), resent %d at line rate: want 0, 0, 0, some",
			src["Ports.Paced"], src["Ports.Pauses"], nrt.PFCFrames, src["Ports.Retrans"])
	}
}

// TestNetRTMultipathIncast is netrt-multipath-fabric in Fig. 9's own
// shape (--incast: 15 servers of one ToR send 1 MB each to a server of
// another), with queues deep enough that nothing is lost: rocetor's
// finding (docs/experiments.md, netrt-multipath-fabric, "Fig. 9's own
// shape") is that spraying one ToR's incast over equal cores reorders
// nothing — the receivers see no packet out of order and send no NAK —
// so Fig. 9's penalty needs paths loaded unequally, which WebSearch's
// other flows do. The sprayed cell must have sprayed, or the claim is
// empty.
func TestNetRTMultipathIncast(t *testing.T) {
	res := runResults(t, "netrt-multipath-fabric", "--incast", "15", "--fabric", "2,8,16", "--queue", "16777216",
		"--multipath", "spray", "--schemes", "gbn", "--seeds", "1")
	if res.Params["incast"] != "15" {
		t.Errorf("record's parameters %v: want incast=15", res.Params)
	}
	r := fabricRuns(t, res, "multipath")["spray"]
	if r.Flows != 15 || r.Completed != 15 || r.Bytes != 15*1_000_000 {
		t.Fatalf("%d flows, %d completed, %d bytes: want 15 flows of 1 MB, all done", r.Flows, r.Completed, r.Bytes)
	}
	if r.Stages["fwd"]["Spray"] == 0 {
		t.Fatalf("fwd counters %v: the sprayed cell sprayed nothing", r.Stages["fwd"])
	}
	if d := r.Drop(); d != 0 {
		t.Errorf("%v drops: want none with 16 MiB queues", d)
	}
	if h := r.HostCounters; h["OutOfOrder"] != 0 || h["NAKsSent"] != 0 {
		t.Errorf("sprayed incast: %d packets out of order, %d NAKs: want none", h["OutOfOrder"], h["NAKsSent"])
	}
}

// TestNetRTFabricHostPortDrops: extra.host_port_drops counts the drops
// at the ToRs' ports toward hosts. Fig. 9's incast sprayed over four
// cores with 1 MiB queues loses only at the receiver's port (the cores
// carry 400 Gbit/s into its 50), so there it is every drop.
func TestNetRTFabricHostPortDrops(t *testing.T) {
	res := runResults(t, "netrt-multipath-fabric", "--incast", "15", "--fabric", "2,4,16", "--multipath", "spray", "--schemes", "gbn", "--seeds", "1")
	r := fabricRuns(t, res, "multipath")["spray"]
	if d, h := r.Drop(), r.Extra["host_port_drops"]; d == 0 || h != d {
		t.Errorf("%v drops, %v of them at host ports: want some, all at the receiver's port", d, h)
	}
}
