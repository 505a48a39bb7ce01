package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"rocetor/cmd/tord/api"
	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/llr"
	"rocetor/tor/netrt"
)

// toHost forwards everything from port 0 (the fabric) to port 1.
type toHost struct{}

func (toHost) Name() string { return "fwd" }
func (toHost) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(1, 2)
		}
	}
}

// The admin API's busiest flows: a DstToR holding packets behind a hole
// shows the flow, its state, ePSN, held packets and host port by name.
func TestBusiestFlows(t *testing.T) {
	mem, err := dataplane.NewMem(make([]byte, 512*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	ports := []dataplane.Port{
		dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, 0, 1}, mem, 64),
		dataplane.NewMemPort("h2", rocev2.MAC{2, 0, 0, 0, 0, 2}, mem, 64),
	}
	dst, err := netrt.NewDstToR(netrt.Config{Fabric: 1})
	if err != nil {
		t.Fatal(err)
	}
	eg := dataplane.DefaultEgress(0, 1<<20)
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports,
		Egress: []dataplane.EgressConfig{eg, eg}, Stages: []dataplane.Stage{toHost{}, dst}})
	if err != nil {
		t.Fatal(err)
	}
	if got := busiestFlows([]string{"up", "h2"}, []*netrt.DstToR{dst}); got == nil || len(got) != 0 {
		t.Fatalf("no traffic: %v, want an empty list", got)
	}
	for _, n := range []uint32{0, 2, 3} { // a hole at 1
		b := make([]byte, 2048)
		l, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr("10.0.2.2"),
			Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(n), Payload: make([]byte, 100)})
		if err != nil {
			t.Fatal(err)
		}
		ports[0].(*dataplane.MemPort).Inject(b[:l])
	}
	w.Step(1)
	w.Step(2_000_000) // past the publication period
	got := busiestFlows([]string{"up", "h2"}, []*netrt.DstToR{dst})
	if len(got) != 1 {
		t.Fatalf("busiest %+v, want the one flow", got)
	}
	f := got[0]
	if f.Src != "10.0.1.2" || f.Dst != "10.0.2.2" || f.QP != 0x100 || f.State != "retx" || f.Port != "h2" ||
		f.EPSN != 1 || f.Held != 2 || f.HeldBytes == 0 || f.Requests < 1 {
		t.Errorf("busiest %+v", f)
	}
	if b, err := json.Marshal(got); err != nil || len(b) == 0 {
		t.Errorf("JSON: %s, %v", b, err)
	}
}

// The admin API's /llr: GET lists the protected ports with the
// monitor's view, POST pins a port's sender on or off or releases it,
// and a bad request changes nothing.
func TestLLRHandler(t *testing.T) {
	stage, err := llr.NewStage(llr.Config{Ports: 1 << 1, Dormant: true})
	if err != nil {
		t.Fatal(err)
	}
	mon, err := llr.NewMonitor(llr.MonitorConfig{}, stage, []string{"h1", "up"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := llrHandler([]string{"h1", "up"}, stage, mon)
	get := func(method, query string) (int, []api.LLRPort) {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(method, "/llr"+query, nil))
		var out []api.LLRPort
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code, out
	}
	if code, out := get("GET", ""); code != 200 || len(out) != 1 || out[0].Port != "up" || out[0].Active || out[0].Pinned ||
		out[0].Mode != "blocking" || out[0].Monitor == nil || out[0].Monitor.Port != "up" {
		t.Fatalf("GET: %d %+v", code, out)
	}
	if code, out := get("POST", "?port=up&state=on"); code != 200 || !out[0].Active || !out[0].Pinned || !stage.Active(1) {
		t.Fatalf("POST on: %d %+v", code, out)
	}
	for _, c := range []struct {
		q    string
		code int
	}{{"?port=h1&state=on", 404}, {"?port=up&state=maybe", 400}, {"?port=nope&state=off", 404}, {"?port=up", 400}} {
		if code, _ := get("POST", c.q); code != c.code || !stage.Active(1) {
			t.Errorf("POST %s: %d, active %v; want %d and no change", c.q, code, stage.Active(1), c.code)
		}
	}
	if code, _ := get("DELETE", "?port=up"); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", code)
	}
	if code, out := get("POST", "?port=up&state=off"); code != 200 || out[0].Active || !out[0].Pinned {
		t.Fatalf("POST off: %d %+v", code, out)
	}
	if code, out := get("POST", "?port=up&state=auto"); code != 200 || out[0].Active || out[0].Pinned {
		t.Fatalf("POST auto: %d %+v", code, out)
	}
}
