package lab

import (
	"testing"

	"rocetor/tor/fabric"
	"rocetor/tor/topo"
)

// TestIncastDetail: incastDetail tells a burst's flows (one size, one
// receiver, one post time) from the background — a lone flow of the
// burst's size included — orders each burst's FCTs, counts resends per
// packet by class, splits the burst by the senders' racks, and reads the receiver's ToR port by queue and no
// other port.
func TestIncastDetail(t *testing.T) {
	tp := topo.LeafSpine(2, 1, 2, topo.Tiers{HostRate: 100e9, FabricRate: 100e9})
	hosts := tp.Hosts()
	rx := tp.Nodes[hosts[3]].Name
	const size = 4096 // 4 packets of 1024
	rec := func(src, dst, sz int, start, fct int64, retx int) fabric.FlowRecord {
		return fabric.FlowRecord{Src: src, Dst: dst, Size: sz, StartNs: start, FCTNs: fct, IdealNs: 1000, OK: true, Retransmits: retx}
	}
	r := &fabric.Result{Records: []fabric.FlowRecord{
		rec(0, 3, size, 100, 10_000, 4), rec(1, 3, size, 100, 30_000, 4), rec(2, 3, size, 100, 20_000, 0), // the burst
		rec(0, 1, size, 100, 2_000, 0), // its size, alone: background
		rec(2, 3, 1000, 50, 3_000, 1),  // background to the receiver
	}}
	r.SwitchResults = []fabric.SwitchResult{{Name: "leaf1", Ports: []fabric.PortResult{
		{Port: rx, TxBytes: 20_000, Queues: []fabric.QueueResult{{Name: "data", Bytes: 18_000, PeakBytes: 9_000}, {Name: "control", Bytes: 2_000, PeakBytes: 500}}},
		{Port: tp.Nodes[hosts[2]].Name, TxBytes: 99_999, Queues: []fabric.QueueResult{{Name: "control", Bytes: 99_999, PeakBytes: 99_999}}},
	}}}
	fr := &FabricRun{}
	incastDetail(tp, size, 1024)(r, fr)
	x := fr.Extra
	for k, want := range map[string]float64{
		xBursts: 1, xFirstUs: 10, xMedianUs: 20, xLastUs: 30, xMedOverLast: 20.0 / 30,
		xBurstGbps: 3 * size * 8 / 30_000.0, xIncastShare: 3.0 / 5, xIncastRetx: 8.0 / 12, xBgRetx: 1.0 / 5,
		xRxBytes: 20_000, xRxData: 18_000, xRxControl: 2_000, xRxDelivery: 3*size + 1000,
		xLocalUs: 20, xRemoteUs: 30, // host 2 shares host 3's leaf; 0 and 1 (10, 30 µs) do not
		xRxDataPeak: 9_000, xRxControlPeak: 500, xP50Incast: 1, // slowdowns 2, 3, 10, 20, 30
	} {
		if x[k] != want {
			t.Errorf("%s = %v, want %v", k, x[k], want)
		}
	}
	if c := fr.Classes[classIncast]; c.Flows != 3 || c.P50FCTNs != 20_000 {
		t.Errorf("incast class %+v, want 3 flows, P50 FCT 20 µs", c)
	}
	if c := fr.Classes[classBackground]; c.Flows != 2 {
		t.Errorf("background class: %d flows, want 2", c.Flows)
	}
}
