package inband

import (
	"fmt"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// MaxPorts bounds the ports a Stage serves; packets leaving by a port of
// a higher index pass untouched. Per-port state is fixed arrays.
const MaxPorts = 64

// maxQueues bounds the egress queues per port the stage tracks this
// batch's bytes of; a packet on a higher queue is stamped with the
// depth alone.
const maxQueues = 8

// Config is the stage's configuration.
type Config struct {
	// Ports are the egress ports that stamp, bit i for port i; 0 means
	// every port.
	Ports uint64
}

// PortStats are the counters of one egress port.
type PortStats struct {
	Stamped   uint64 // records written
	Full      uint64 // request tails whose records were all filled: not stamped
	Malformed uint64 // tails with the magic but a bad header or short frame: not stamped
	Echoes    uint64 // echo tails (receivers' ACKs): not stamped
}

// Add adds p's counters to t's.
func (t *PortStats) Add(p *PortStats) {
	t.Stamped += p.Stamped
	t.Full += p.Full
	t.Malformed += p.Malformed
	t.Echoes += p.Echoes
}

// Stats are a Stage's counters, per egress port index.
type Stats struct {
	Ports [MaxPorts]PortStats
}

// Sum returns the counters of all ports together.
func (st Stats) Sum() PortStats {
	var t PortStats
	for i := range st.Ports {
		t.Add(&st.Ports[i])
	}
	return t
}

// Stage stamps INT: see the package doc. One worker owns each Stage; its
// counters are plain fields and only Snapshot may be called from other
// goroutines. Its zero value stamps at every port.
type Stage struct {
	cfg  Config
	pend [MaxPorts][maxQueues]int // bytes this batch left on each queue
	st   Stats
	pub  dataplane.Published[Stats]
}

// NewStage returns a stage for c.
func NewStage(c Config) *Stage { return &Stage{cfg: c} }

// Name implements dataplane.Stage.
func (s *Stage) Name() string { return "int" }

// Process implements dataplane.Stage.
func (s *Stage) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	n := min(c.NumPorts(), MaxPorts)
	clear(s.pend[:n])
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			s.packet(c, p, n)
		}
	}
	s.pub.Maybe(c.Now, &s.st)
}

func (s *Stage) packet(c *dataplane.Ctx, p *dataplane.Packet, nports int) {
	out := int(p.Out)
	if out >= nports || (s.cfg.Ports != 0 && s.cfg.Ports&(1<<out) == 0) {
		return
	}
	q := int(p.Queue)
	depth := c.QueueDepth(out, q)
	if q < maxQueues {
		d := s.pend[out][q]
		s.pend[out][q] += int(p.Len)
		depth += d
	}
	if p.Meta.Kind != rocev2.KindRoCE {
		return
	}
	t, bad := rocev2.FindINT(c.Mem.Frame(p), int(p.Meta.End))
	ps := &s.st.Ports[out]
	switch {
	case bad:
		ps.Malformed++
	case t == nil:
	case t.Echo():
		ps.Echoes++
	case t.Full():
		ps.Full++
	default:
		e := c.Egress(out)
		var tx uint64
		for i := range e.NumQueues() {
			tx += e.Stats(i).Bytes
		}
		t.Push(rocev2.Stamp(c.Now, depth, tx, e.RateBps()))
		ps.Stamped++
	}
}

// Poll implements dataplane.Source, only to publish the counters, so
// they are current also when traffic stops.
func (s *Stage) Poll(c *dataplane.Ctx) int {
	s.pub.Maybe(c.Now, &s.st)
	return 0
}

// Stats returns the counters; call it from the worker's goroutine (or
// after the worker stopped); other goroutines use Snapshot.
func (s *Stage) Stats() Stats { return s.st }

// Snapshot returns the counters as last published, about once a
// millisecond of worker time.
func (s *Stage) Snapshot() Stats { return s.pub.Load() }

// Publish stores the counters for Snapshot now, at worker time now.
func (s *Stage) Publish(now int64) { s.pub.Store(now, &s.st) }

// PortMask returns the mask of the named ports among ports, or an error
// naming one that is not there or beyond MaxPorts.
func PortMask(names, ports []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		i := -1
		for j, p := range ports {
			if p == n {
				i = j
			}
		}
		switch {
		case i < 0:
			return 0, fmt.Errorf("%q is not one of ports", n)
		case i >= MaxPorts:
			return 0, fmt.Errorf("%q is port %d; INT stamps at the first %d", n, i, MaxPorts)
		}
		m |= 1 << i
	}
	return m, nil
}
