package pipeline

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
)

func TestBufferConfig(t *testing.T) {
	parse := func(y string) Config {
		t.Helper()
		c, err := ParseConfig([]byte("ports: [up, h1]\n"+y), "test")
		if err != nil {
			t.Fatal(err)
		}
		c.AdminAddr, c.MetricsAddr = "", ""
		return c
	}
	for y, field := range map[string]string{
		"buffer: {}\n": "buffer.size",
		"buffer: {size: 64KiB, queue_reserve: 8KiB}\n":      "buffer.size", // 4 queues × 2 ports × 8 KiB
		"buffer: {size: 64KiB, port_reserve: 32KiB}\n":      "buffer.size", // 2 ports × 32 KiB
		"buffer: {size: 1MiB, queue_reserve: 2MiB}\n":       "buffer.queue_reserve",
		"buffer: {size: 1MiB, alpha: {bulk: 1}}\n":          "buffer.alpha",
		"buffer: {size: 1MiB, alpha: {data: 0}}\n":          "buffer.alpha.data",
		"buffer: {size: 1MiB, alpha: {control: 1000}}\n":    "buffer.alpha.control",
		"buffer: {size: 1MiB, alpha: {data: 0.001}}\n":      "buffer.alpha.data",
		"buffer: {size: 1MiB, alpha: {data: -0.5}}\n":       "buffer.alpha.data",
		"buffer: {size: 1MiB, alpha: {retransmit: .NaN}}\n": "buffer.alpha.retransmit",
	} {
		c := parse(y)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%q: %v, want an error naming %s", y, err, field)
		}
	}
	if _, err := ParseConfig([]byte("buffer: {size: 1MiB, alfa: {}}\n"), "test"); err == nil {
		t.Error("a misspelt key was accepted")
	}
	// reserve was each queue's before port_reserve: refused, naming both.
	if _, err := ParseConfig([]byte("buffer: {size: 1MiB, reserve: 16KiB}\n"), "test"); err == nil ||
		!strings.Contains(err.Error(), "queue_reserve: 16KiB") || !strings.Contains(err.Error(), "port_reserve") {
		t.Errorf("the old reserve: %v, want an error naming queue_reserve and port_reserve", err)
	}
	// Absent: the queues are what they were, with no pool.
	c := parse("")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mem, ports := twoPorts(t)
	pn, _ := NewPlan(&c, &fwd.FIB{}, nil)
	pl, err := pn.Build(0, mem, ports, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pn.Buffer != nil || pl.Worker.Egress(0).Shared() != nil {
		t.Fatal("a pool without a buffer section")
	}
	// Present: one pool, each port's and each queue's reserve, and α.
	c = parse("buffer: {size: 1MiB, port_reserve: 32KiB, queue_reserve: 16KiB, alpha: {control: 8, idle: 0.25}}\n")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mem, ports = twoPorts(t)
	pn, _ = NewPlan(&c, &fwd.FIB{}, nil)
	pl, err = pn.Build(0, mem, ports, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := pl.Worker.Egress(1)
	if e.Shared() != pn.Buffer || pn.Buffer.Size() != 1<<20-2*(32<<10+4*16<<10) {
		t.Fatalf("pool %v of %d bytes", e.Shared(), pn.Buffer.Size())
	}
	if size, held := e.PortReserve(); size != 32<<10 || held != 0 {
		t.Fatalf("port reserve %d, %d held; want 32 KiB, none", size, held)
	}
	own := 16<<10 + 32<<10 // the queue's reserve and the port's, free
	for q, want := range map[string]int{"control": own + 8*int(pn.Buffer.Size()), "data": own + int(pn.Buffer.Size()), "idle": own + int(pn.Buffer.Size())/4} {
		if th := e.Threshold(e.QueueIndex(q)); th != min(want, 1<<20) {
			t.Errorf("%s: threshold %d, want %d", q, th, min(want, 1<<20))
		}
	}
}

// sharedBufferYAML is the section tor/fabric's TestSharedBufferIncast
// gives its switches: a buffer far below the queues' static limits.
const sharedBufferYAML = "egress: {queue_limit: 1MiB, rate: 1G}\nbuffer: {size: 512KiB, queue_reserve: 8KiB, alpha: {data: 1}}\n"

// TestSharedBufferIncast is tor/fabric's TestSharedBufferIncast on one
// switch as tord builds it, over in-memory ports, on one worker and on
// two that share the pool: from the uplink, four senders' worth of
// 1 Gbit/s into h7 and two senders' worth into its neighbour h8, whose
// ports drain at 1 Gbit/s. The incast's data queue meets its dynamic
// threshold first, as in the simulator; every drop is a threshold
// drop; the pool is never exceeded.
func TestSharedBufferIncast(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			c := testConfig(t, fmt.Sprintf("ports: [up, h7, h8]\nworkers: %d\n%s", workers, sharedBufferYAML))
			tab := &fwd.TableConfig{}
			for i, h := range []string{"10.0.7.0/24", "10.0.8.0/24"} {
				gw := netip.AddrFrom4([4]byte{10, 9, byte(i), 1})
				tab.Routes = append(tab.Routes, fwd.Route{Prefix: netip.MustParsePrefix(h), NextHops: []fwd.NextHop{{Port: uint16(i + 1), Gateway: gw}}})
				tab.Neighbours = append(tab.Neighbours, fwd.Neighbour{Port: uint16(i + 1), Addr: gw, MAC: rocev2.MAC{2, 1, byte(i)}})
			}
			tb, err := fwd.NewTable(tab)
			if err != nil {
				t.Fatal(err)
			}
			fib := &fwd.FIB{}
			fib.Store(tb)
			pn, err := NewPlan(&c, fib, nil)
			if err != nil {
				t.Fatal(err)
			}
			var now int64
			var pls []*Pipeline
			var ups []*dataplane.MemPort
			for w := range workers {
				mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
				if err != nil {
					t.Fatal(err)
				}
				var ports []dataplane.Port
				for i, name := range c.Ports {
					p := dataplane.NewMemPort(name, rocev2.MAC{2, 0, 0, 0, byte(w), byte(i + 1)}, mem, 1024)
					if i == 0 {
						ups = append(ups, p)
					}
					ports = append(ports, p)
				}
				pl, err := pn.Build(w, mem, ports, func() int64 { return now })
				if err != nil {
					t.Fatal(err)
				}
				pls = append(pls, pl)
			}
			frame := func(dst string, seq uint32) []byte {
				b := make([]byte, 2048)
				n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr(dst),
					DSCP: 26, Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(seq), Payload: make([]byte, 1024)})
				if err != nil {
					t.Fatal(err)
				}
				return b[:n]
			}
			h7, h8 := frame("10.0.7.2", 1), frame("10.0.8.2", 1)
			// A 1,100-byte frame lasts 8.8 µs at 1 Gbit/s: every
			// 8.8 µs, each sender's frame arrives (spread over the
			// workers) and each receiver's port sends about one.
			var order []string
			dropped := map[string]bool{}
			var maxUsed int64
			for tick := 0; tick < 2000; tick++ {
				now += 8800
				for s := 0; s < 6; s++ {
					f := h7
					if s >= 4 {
						f = h8
					}
					ups[(tick*6+s)%workers].Inject(f)
				}
				for _, pl := range pls {
					pl.Worker.Step(now)
					maxUsed = max(maxUsed, pn.Buffer.Used())
				}
				for p := 1; p < 3; p++ {
					var drops uint64
					for _, pl := range pls {
						drops += pl.Worker.Egress(p).Stats(pl.Worker.Egress(p).QueueIndex("data")).ThresholdDrops
					}
					if k := c.Ports[p] + "/data"; drops > 0 && !dropped[k] {
						dropped[k] = true
						order = append(order, k)
					}
				}
			}
			if len(order) == 0 || order[0] != "h7/data" {
				t.Fatalf("queues dropped in the order %v, want h7/data first (as tor/fabric's TestSharedBufferIncast)", order)
			}
			if maxUsed > pn.Buffer.Size() {
				t.Fatalf("pool reached %d of %d", maxUsed, pn.Buffer.Size())
			}
			var full, threshold uint64
			for _, pl := range pls {
				pl.Publish(now)
				s := pl.Worker.Snapshot()
				full += s.Drops[dataplane.ReasonQueueFull]
				threshold += s.Drops[dataplane.ReasonBufferThreshold]
				if s.SharedSize != pn.Buffer.Size() {
					t.Errorf("snapshot's pool %d, want %d", s.SharedSize, pn.Buffer.Size())
				}
			}
			if full != 0 || threshold == 0 {
				t.Fatalf("%d drops at the static limit, %d at the threshold; want 0 and some", full, threshold)
			}
			t.Logf("order %v, %d threshold drops, pool at most %d of %d", order, threshold, maxUsed, pn.Buffer.Size())
		})
	}
}
