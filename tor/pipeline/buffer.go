package pipeline

import (
	"slices"

	"rocetor/dataplane"
)

// BufferConfig is a switch-wide shared buffer with dynamic per-queue
// thresholds, the Choudhury–Hahne rule of commodity switch MMUs
// (dataplane.SharedBuffer):
//
//	buffer:
//	  size: 32MiB      # the switch's packet buffer: every queue of every port
//	  reserve: 16KiB   # each egress queue's own bytes, out of size; the rest is shared
//	  alpha:           # per queue: it may hold reserve + alpha × the shared bytes free
//	    data: 1
//	    control: 8     # queues not named: 1
//
// A queue beyond its reserve may grow while its shared bytes stay at
// most alpha × (size − every reserve − the shared bytes in use); a
// frame that would pass that is dropped (buffer_threshold). The pool is
// the switch's, whatever the number of workers: they share it by atomic
// compare-and-swap, as tor/netrt.Budgets does. With workers: W and no
// handoff, each worker's share of a port's queue has reserve/W of its
// own and is judged by its own length.
//
// egress.queue_limit still caps each queue: set it to what one queue
// may ever hold (up to size) for the dynamic threshold alone to govern.
type BufferConfig struct {
	Size    dataplane.Bytes    `yaml:"size"`    // the switch's buffer, every port's queues, e.g. 32MiB
	Reserve dataplane.Bytes    `yaml:"reserve"` // each egress queue's own bytes, out of size
	Alpha   map[string]float64 `yaml:"alpha"`   // per queue name: the share of the free shared bytes it may take; default 1
}

// queues is the number of egress queues of each port.
func (c *Config) queues() int { return len(c.Layout().Queues) }

// Pool returns the shared pool's bytes: size less the reserve of every
// one of queues egress queues of each of ports ports.
func (b *BufferConfig) Pool(ports, queues int) int64 {
	return int64(b.Size) - int64(b.Reserve)*int64(queues*ports)
}

// alpha returns queue q's α.
func (b *BufferConfig) alpha(q string) float64 {
	if a, ok := b.Alpha[q]; ok {
		return a
	}
	return 1
}

// validate checks the section against the rest of the configuration.
func (b *BufferConfig) validate(c *Config) error {
	if b == nil {
		return nil
	}
	switch {
	case b.Size <= 0:
		return bad("buffer.size", "%d bytes, want > 0", b.Size)
	case b.Reserve < 0 || b.Reserve > c.Egress.QueueLimit:
		return bad("buffer.reserve", "%d bytes, want 0 to egress.queue_limit (%d)", b.Reserve, c.Egress.QueueLimit)
	case b.Pool(len(c.Ports), c.queues()) <= 0:
		return bad("buffer.size", "%d bytes, want more than the reserves: %d queues × %d ports × %d bytes",
			b.Size, c.queues(), len(c.Ports), b.Reserve)
	}
	eg := c.Layout()
	names := make([]string, 0, len(b.Alpha))
	for q := range b.Alpha {
		names = append(names, q)
	}
	slices.Sort(names)
	for _, q := range names {
		if eg.QueueIndexByName(q) < 0 {
			return bad("buffer.alpha", "%q is not a queue %v", q, c.queueNames())
		}
		if a := b.Alpha[q]; !(a >= 1.0/256 && a <= 256) {
			return bad("buffer.alpha."+q, "%v, want 1/256 (0.00390625) to 256", a)
		}
	}
	return nil
}

// Shared returns the switch's pool, nil without a section. Make one per
// switch and give it to every worker (Plan does).
func (b *BufferConfig) Shared(ports, queues int) *dataplane.SharedBuffer {
	if b == nil {
		return nil
	}
	return dataplane.NewSharedBuffer(b.Pool(ports, queues))
}

// apply places the queues of egs in the pool: each queue's share of the
// reserve (one of shares workers) and its α.
func (b *BufferConfig) apply(egs []dataplane.EgressConfig, pool *dataplane.SharedBuffer, shares int) {
	if b == nil {
		return
	}
	for i := range egs {
		egs[i].Shared = pool
		qs := slices.Clone(egs[i].Queues)
		for q := range qs {
			qs[q].Reserve, qs[q].Alpha = int(b.Reserve)/shares, b.alpha(qs[q].Name)
		}
		egs[i].Queues = qs
	}
}

// MaxQueued returns the most bytes the egress queues of a switch with
// ports ports may hold at once: every queue at its limit, or
// the shared buffer's size when that is less.
func (c *Config) MaxQueued(ports int) int {
	n := 0
	for _, q := range c.Layout().Queues {
		n += ports * q.Limit
	}
	if c.Buffer != nil {
		n = min(n, int(c.Buffer.Size))
	}
	return n
}
