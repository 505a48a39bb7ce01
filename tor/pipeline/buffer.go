package pipeline

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"rocetor/dataplane"
)

// BufferConfig is a switch-wide shared buffer with dynamic per-queue
// thresholds, the Choudhury–Hahne rule of commodity switch MMUs
// (dataplane.SharedBuffer), with static reserves per port and per
// queue as those MMUs guarantee minimums:
//
//	buffer:
//	  size: 32MiB          # the switch's packet buffer: every queue of every port
//	  port_reserve: 64KiB  # each port's own bytes, its queues together, out of size
//	  queue_reserve: 0     # each egress queue's own bytes, out of size, before the port's
//	  alpha:               # per queue: beyond the reserves it may hold alpha × the shared bytes free
//	    data: 1
//	    control: 8         # queues not named: 1
//
// A frame fills its queue's reserve, then its port's, then the shared
// pool: size less every port's reserve and every queue's. A queue may
// grow in the pool while its bytes there stay at most alpha × (the
// pool − the bytes of it in use); a frame that would pass that is
// dropped (buffer_threshold). The pool is the switch's, whatever the
// number of workers: they share it by atomic compare-and-swap, as
// tor/netrt.Budgets does. With workers: W and no handoff, each
// worker's share of a port has port_reserve/W of its own, each share
// of a queue queue_reserve/W, and each is judged by its own length.
//
// The field reserve (each queue's, before port_reserve existed) is
// refused with a message naming both (UnmarshalYAML): a configuration
// that set it meant queue_reserve, and silently reading it as the
// port's would shrink every port's guarantee.
//
// egress.queue_limit still caps each queue: set it to what one queue
// may ever hold (up to size) for the dynamic threshold alone to govern.
type BufferConfig struct {
	Size         dataplane.Bytes    `yaml:"size"`          // the switch's buffer, every port's queues, e.g. 32MiB
	PortReserve  dataplane.Bytes    `yaml:"port_reserve"`  // each port's own bytes, its queues together, out of size
	QueueReserve dataplane.Bytes    `yaml:"queue_reserve"` // each egress queue's own bytes, out of size
	Alpha        map[string]float64 `yaml:"alpha"`         // per queue name: the share of the free shared bytes it may take; default 1
}

// UnmarshalYAML reads the section as ParseConfig's strict decoder
// would, and refuses reserve, the old name of queue_reserve, with a
// message that says what became of it.
func (b *BufferConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain BufferConfig
	if n.Kind == yaml.MappingNode {
		known := map[string]bool{}
		t := reflect.TypeFor[plain]()
		for i := range t.NumField() {
			known[strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]] = true
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k := n.Content[i]; {
			case k.Value == "reserve":
				return fmt.Errorf("line %d: buffer.reserve was each queue's reserve: write queue_reserve: %s for that, "+
					"or port_reserve for a reserve each port's queues share", k.Line, n.Content[i+1].Value)
			case !known[k.Value]:
				return fmt.Errorf("line %d: field %s not found in buffer", k.Line, k.Value)
			}
		}
	}
	return n.Decode((*plain)(b))
}

// queues is the number of egress queues of each port.
func (c *Config) queues() int { return len(c.Layout().Queues) }

// reserved returns the bytes every reserve of a switch of ports ports
// with queues egress queues each sets aside: each port's and each of
// its queues'.
func (b *BufferConfig) reserved(ports, queues int) int64 {
	return (int64(b.PortReserve) + int64(b.QueueReserve)*int64(queues)) * int64(ports)
}

// Pool returns the shared pool's bytes: size less every port's and
// every queue's reserve, for ports ports of queues egress queues.
func (b *BufferConfig) Pool(ports, queues int) int64 {
	return int64(b.Size) - b.reserved(ports, queues)
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
	case b.QueueReserve < 0 || b.QueueReserve > c.Egress.QueueLimit:
		return bad("buffer.queue_reserve", "%d bytes, want 0 to egress.queue_limit (%d)", b.QueueReserve, c.Egress.QueueLimit)
	case b.PortReserve < 0:
		return bad("buffer.port_reserve", "%d bytes, want ≥ 0", b.PortReserve)
	case b.Pool(len(c.Ports), c.queues()) <= 0:
		return bad("buffer.size", "%d bytes, want more than the reserves: %d ports × (port_reserve %d + %d queues × queue_reserve %d)",
			b.Size, len(c.Ports), b.PortReserve, c.queues(), b.QueueReserve)
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

// apply places the ports and queues of egs in the pool: each port's
// and each queue's share of their reserves (one of shares[i] workers
// for port i) and each queue's α.
func (b *BufferConfig) apply(egs []dataplane.EgressConfig, pool *dataplane.SharedBuffer, shares []int) {
	if b == nil {
		return
	}
	for i := range egs {
		egs[i].Shared, egs[i].PortReserve = pool, int(b.PortReserve)/shares[i]
		qs := slices.Clone(egs[i].Queues)
		for q := range qs {
			qs[q].Reserve, qs[q].Alpha = int(b.QueueReserve)/shares[i], b.alpha(qs[q].Name)
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
