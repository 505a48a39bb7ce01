package telemetry

import (
	"net/netip"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/pipeline"
)

// TestQoSMetrics: with the default QoS profile, frames of DSCP 26, 48
// and 0 are counted on the data, cnp and lossy queues of the port they
// leave by, and rocetor_qos_queue_info says which class each queue
// carries, how it is scheduled and whether PFC pauses it.
func TestQoSMetrics(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.Ports = []string{"h1", "s1"}
	cfg.QoS = &pipeline.QoSConfig{}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	gw := netip.MustParseAddr("10.9.1.1")
	sw := newMemSwitch(t, cfg, &fwd.TableConfig{
		Routes:     []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{{Port: 1, Gateway: gw}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: gw, MAC: rocev2.MAC{2, 9, 1}}},
	}, 1024)
	for dscp, n := range map[uint8]int{26: 4, 48: 2, 0: 1} {
		for i := range n {
			b := make([]byte, 2048)
			k, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr("10.0.2.2"),
				DSCP: dscp, Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(uint32(i)), Payload: make([]byte, 512)})
			if err != nil {
				t.Fatal(err)
			}
			sw.ports[0][0].Inject(b[:k])
		}
	}
	sw.step(10_000)
	for _, pl := range sw.pls {
		pl.Publish(sw.now)
	}
	got, err := Gather(Switch{Config: &sw.cfg, Pipelines: sw.pls})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{
		`rocetor_queue_enqueued_packets_total{port="s1",queue="data"}`:                                                     4,
		`rocetor_queue_enqueued_packets_total{port="s1",queue="cnp"}`:                                                      2,
		`rocetor_queue_enqueued_packets_total{port="s1",queue="lossy"}`:                                                    1,
		`rocetor_qos_queue_info{pfc_priority="3",port="s1",queue="data",scheduler="dwrr",traffic_class="3",weight="50"}`:   1,
		`rocetor_qos_queue_info{pfc_priority="-1",port="s1",queue="cnp",scheduler="strict",traffic_class="6",weight="0"}`:  1,
		`rocetor_qos_queue_info{pfc_priority="-1",port="s1",queue="lossy",scheduler="dwrr",traffic_class="0",weight="50"}`: 1,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
}
