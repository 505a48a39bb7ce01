package lab

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
)

// A model of the DCQCN experiments' bottleneck, to choose DCQCN's
// parameters for the testbed without running it: n QPs of nic/cc's
// DCQCN (the code roceperf runs), each paced by its own reaction point
// at up to the line rate, feed one FIFO drained at the bottleneck's
// rate, with the byte limit and the WRED-shaped marking at dequeue that
// tord applies (dataplane's ECN marking); a receiver's notification
// point answers CE marks with CNPs that reach the sender after a
// feedback delay. Time steps by 1 µs. Not modelled: loss recovery (a
// dropped packet is only counted), the senders' window, the CPUs.
type dcqcnModel struct {
	n           int
	cfg         cc.DCQCNConfig
	line, bneck float64 // bit/s
	kmin, kmax  float64 // bytes
	pmax        float64
	limit       float64 // bytes
	feedback    int64   // ns from the queue's dequeue to the CNP at the sender
	dur         int64   // ns
}

// dcqcnModelResult is what a model run gives: the share of 1 ms samples
// (after the first tenth of the run) with the depth below Kmin, in
// [Kmin, Kmax] and above, drops, and each flow's rate over the second
// half in Mbit/s.
type dcqcnModelResult struct {
	below, in, above float64
	drops            int
	rates            []float64
}

func (r dcqcnModelResult) String() string {
	var rs []string
	for _, x := range r.rates {
		rs = append(rs, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return "depth below/in/above " + fmtFloat(r.below*100, 0) + "/" + fmtFloat(r.in*100, 0) + "/" + fmtFloat(r.above*100, 0) +
		"%, drops " + strconv.Itoa(r.drops) + ", rates " + strings.Join(rs, " ") + " Mbit/s, Jain " + fmtFloat(Jain(r.rates), 3)
}

func (m dcqcnModel) run(t *testing.T) dcqcnModelResult {
	t.Helper()
	const size = 1100.0 // a 1024-byte-MTU RoCE frame on the wire
	type pkt struct {
		at   int64
		flow int
		ce   bool
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rp, np := make([]*cc.DCQCN, m.n), make([]*cc.DCQCN, m.n)
	qp, qn := make([]*nic.QP, m.n), make([]*nic.QP, m.n)
	for i := range m.n {
		var err error
		if rp[i], err = cc.NewDCQCN(uint64(m.line), m.cfg); err != nil {
			t.Fatal(err)
		}
		np[i], _ = cc.NewDCQCN(uint64(m.line), m.cfg)
		qp[i], qn[i] = new(nic.QP), new(nic.QP)
		rp[i].Init(1)
		np[i].Init(1)
		rp[i].Open(qp[i])
		np[i].Open(qn[i])
	}
	var queue, cnps []pkt
	var depth float64
	var busy int64
	rx, rxHalf := make([]float64, m.n), make([]float64, m.n)
	var res dcqcnModelResult
	var samples int
	for now := int64(0); now < m.dur; now += 1000 {
		for i := range m.n {
			for rp[i].Ready(qp[i], now) <= now {
				rp[i].Sent(qp[i], now, int(size))
				if depth+size > m.limit {
					res.drops++
					continue
				}
				queue = append(queue, pkt{flow: i})
				depth += size
				rx[i] += size
			}
		}
		for len(queue) > 0 && busy <= now {
			p := queue[0]
			queue = queue[1:]
			depth -= size
			busy = max(busy, now) + int64(size*8/m.bneck*1e9)
			var prob float64
			switch {
			case depth <= m.kmin:
			case depth > m.kmax:
				prob = 1
			default:
				prob = m.pmax * (depth - m.kmin) / (m.kmax - m.kmin)
			}
			if rng.Float64() < prob && np[p.flow].Marked(qn[p.flow], now) {
				cnps = append(cnps, pkt{at: now + m.feedback, flow: p.flow})
			}
		}
		for len(cnps) > 0 && cnps[0].at <= now {
			rp[cnps[0].flow].CNP(qp[cnps[0].flow], now)
			cnps = cnps[1:]
		}
		if now%1e6 == 0 && now > m.dur/10 {
			samples++
			switch {
			case depth < m.kmin:
				res.below++
			case depth <= m.kmax:
				res.in++
			default:
				res.above++
			}
		}
		if now == m.dur/2 {
			copy(rxHalf, rx)
		}
	}
	res.below, res.in, res.above = res.below/float64(samples), res.in/float64(samples), res.above/float64(samples)
	for i := range m.n {
		res.rates = append(res.rates, (rx[i]-rxHalf[i])*8/(float64(m.dur)/2e9)/1e6)
	}
	return res
}

// dcqcnConfigOf is ConnectX's defaults with roceperf --dcqcn- flags
// (NAME=VALUE,…) applied, the integer ones the experiments set.
func dcqcnConfigOf(t *testing.T, params string) cc.DCQCNConfig {
	t.Helper()
	c := cc.DefaultDCQCNConfig()
	for _, kv := range splitList(params) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
		field := map[string]*uint32{"dce-tcp-rtt": &c.DCETCPRTT, "rpg-time-reset": &c.RPGTimeReset, "rpg-ai-rate": &c.RPGAIRate,
			"rpg-hai-rate": &c.RPGHAIRate, "rpg-byte-reset": &c.RPGByteReset, "dce-tcp-g": &c.DCETCPG,
			"min-time-between-cnps": &c.MinTimeBetweenCNPs}[k]
		if field == nil {
			t.Fatalf("%s: not modelled", k)
		}
		*field = uint32(n)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDCQCNModel is why the experiments scale DCQCN's parameters
// (testbedDCQCN): at the testbed's 200 Mbit/s, with its 20 KB/100 KB/20 %
// marking and 256 KiB limit and a 0.5 ms feedback delay, ConnectX's
// defaults leave the queue above Kmax most of the time and overflow it
// with four senders, and the scaled parameters keep it between Kmin and
// Kmax most of the time, drop nothing and share fairly.
func TestDCQCNModel(t *testing.T) {
	o := dcqcnDefaults(false)
	base := dcqcnModel{line: 200e6, bneck: 200e6, kmin: 20e3, kmax: 100e3, pmax: 0.2, limit: 256 << 10,
		feedback: 500e3, dur: 1.5e9}
	if o.BottleneckRate != "200M" || o.ECNMin != "20KB" || o.ECNMax != "100KB" || o.ECNPMax != 20 || o.QueueLimit != "256KiB" {
		t.Fatalf("the model is of %+v's bottleneck no more", o)
	}
	for _, n := range []int{2, 4} {
		m := base
		m.n, m.cfg = n, dcqcnConfigOf(t, "")
		def := m.run(t)
		m.cfg = dcqcnConfigOf(t, testbedDCQCN)
		scaled := m.run(t)
		t.Logf("%d senders, ConnectX's defaults: %v", n, def)
		t.Logf("%d senders, %s: %v", n, testbedDCQCN, scaled)
		if def.above < 0.5 {
			t.Errorf("%d senders: ConnectX's defaults kept the queue above Kmax in only %.0f%% of the samples: is the scaling still needed?",
				n, def.above*100)
		}
		if scaled.in < 0.7 || scaled.drops != 0 || Jain(scaled.rates) < 0.95 {
			t.Errorf("%d senders, scaled: %v; want the depth in [Kmin, Kmax] in most samples, no drop, fair shares", n, scaled)
		}
	}
}

// TestDCQCNModelHeadroom is why dcqcn-incast's queue limit is 448 KiB
// (dcqcnDefaults) and not lower: when CNPs take 2 ms to come back, as
// on a loaded testbed, four senders starting together at the line rate
// overflow a 256 KiB queue before DCQCN's cuts take hold, and not a
// 448 KiB one. (The model's flows have no window; the experiment's are
// Go-Back-N's, four of which overflow 448 KiB without DCQCN.)
func TestDCQCNModelHeadroom(t *testing.T) {
	o := dcqcnDefaults(true)
	if o.QueueLimit != "448KiB" {
		t.Fatalf("dcqcn-incast's queue limit %s: the model is of 448KiB", o.QueueLimit)
	}
	m := dcqcnModel{n: 4, cfg: dcqcnConfigOf(t, testbedDCQCN), line: 200e6, bneck: 200e6, kmin: 20e3, kmax: 100e3, pmax: 0.2,
		limit: 256 << 10, feedback: 2e6, dur: 1e9}
	shallow := m.run(t)
	m.limit = 448 << 10
	deep := m.run(t)
	t.Logf("4 senders, 2 ms feedback: 256 KiB: %v; 448 KiB: %v", shallow, deep)
	if shallow.drops == 0 || deep.drops != 0 {
		t.Errorf("4 senders: %d drops into 256 KiB, %d into 448 KiB; want some and none", shallow.drops, deep.drops)
	}
}
