package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"rocetor/afxdp"
	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
)

// SessionConfig configures one Session.
type SessionConfig struct {
	// Endpoint configures the endpoint; IP and Transport are required.
	// NewSession fills in MAC, Port, Egress, FrameSize and Clock.
	Endpoint nic.Config
	// RateBps shapes the port (the endpoint's pacing in all; 0: as fast
	// as the socket takes frames). QueueLimit is each egress queue's
	// byte budget (default: what the shaper drains in 2 ms, 16 to 64
	// KiB; 64 KiB unshaped): the data queue's is the endpoint's
	// transmit backpressure. A NIC sends what it builds at once; here a
	// built frame waits in the queue, and its wait counts in the
	// round trip the retransmission timer measures — 256 KiB behind a
	// 1 Gb/s shaper are 2 ms, beyond gbn's 1 ms RTO — so it is kept
	// short.
	RateBps    uint64
	QueueLimit int
	// Poll is the worker's poll mode: by default adaptive, sleeping at
	// most MaxSleep (default 50 µs) when idle, which bounds the delay
	// of a post to an idle endpoint; Busy never sleeps; Interrupt
	// sleeps as soon as a loop finds nothing to do, for hosts that
	// share a few CPUs with switches (roceperf --poll).
	Poll     *dataplane.PollMode
	MaxSleep time.Duration
}

// ErrSessionRunning: NewSession while another session of the host runs.
var ErrSessionRunning = errors.New("host: a session is running")

// Session is one endpoint on the host's port, with the worker that runs
// it. Set it up through Endpoint (RegisterMR, CreateQP, Connect), then
// Start; post and poll from one goroutine; Stop ends it. Start and Stop
// belong to the host's owner; Worker, Endpoint and Now are safe from any
// goroutine.
type Session struct {
	h      *Host
	e      *nic.Endpoint
	w      *dataplane.Worker
	clock  func() int64
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// defaultQueueLimit is the data queue's budget for a port shaped to
// rate: what the shaper drains in 2 ms, between 16 and 64 KiB. Frames
// wait there before the wire, and the wait counts in the round trip the
// retransmission timer measures: 64 KiB behind a 25 Mbit/s shaper are
// 21 ms, beyond Go-Back-N's 16 ms RTO, and two senders paced at 25
// Mbit/s each into one receiver timed out 524 and 711 times in a
// lossless run (2026-11-28, the dumbbell) where one sender at 100
// Mbit/s, 5 ms of queue, timed out never.
func defaultQueueLimit(rate uint64) int {
	if rate == 0 {
		return 64 << 10
	}
	return min(64<<10, max(16<<10, int(rate/8/500)))
}

// NewSession builds an endpoint and its worker on the host's port. The
// worker does not run until Start.
func (h *Host) NewSession(c SessionConfig) (*Session, error) {
	if h.session != nil {
		return nil, ErrSessionRunning
	}
	if c.QueueLimit == 0 {
		c.QueueLimit = defaultQueueLimit(c.RateBps)
	}
	if c.MaxSleep == 0 {
		c.MaxSleep = 50 * time.Microsecond
	}
	start := time.Now()
	clock := func() int64 { return int64(time.Since(start)) }
	eg := dataplane.DefaultEgress(c.RateBps, c.QueueLimit)
	ec := c.Endpoint
	ec.MAC, ec.Port, ec.Egress, ec.FrameSize, ec.Clock = h.mac, 0, eg, h.mem.FrameSize(), clock
	if !h.HasAddr(ec.IP) {
		return nil, fmt.Errorf("endpoint address %v is not an address of %s", ec.IP, h.cfg.Dev)
	}
	e, err := nic.NewEndpoint(ec)
	if err != nil {
		return nil, fmt.Errorf("endpoint on %s: %w", h.cfg.Dev, err)
	}
	maxQPs := ec.MaxQPs
	if maxQPs == 0 {
		maxQPs = 1024
	}
	mode := dataplane.Adaptive
	if c.Poll != nil {
		mode = *c.Poll
	}
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{Mem: h.mem, Ports: []dataplane.Port{h.port},
		Egress: []dataplane.EgressConfig{eg}, Stages: []dataplane.Stage{e},
		Classifier: e.Classifier(rocev2.Classifier{VerifyICRC: true}), Mode: mode, Clock: clock,
		TimerCap: 4*maxQPs + 1024, MaxSleep: c.MaxSleep, Yield: afxdp.Yield})
	if err != nil {
		return nil, fmt.Errorf("worker on %s: %w", h.cfg.Dev, err)
	}
	s := &Session{h: h, e: e, w: w, clock: clock}
	h.session = s
	return s, nil
}

// Endpoint returns the session's endpoint.
func (s *Session) Endpoint() *nic.Endpoint { return s.e }

// Worker returns the session's worker (for Snapshot).
func (s *Session) Worker() *dataplane.Worker { return s.w }

// Now returns the session's clock: the time the endpoint and the worker
// stamp posts and completions with.
func (s *Session) Now() int64 { return s.clock() }

// Start runs the worker on a goroutine of its own (locked to an OS
// thread) until Stop. Set up QPs and regions first.
//
// It first runs one loop of the worker on the caller's goroutine (the
// worker is nobody else's yet), which takes in the work posted so far:
// receives posted before Start are in their queues when it returns, so
// a peer told to send only then cannot meet an empty receive queue —
// an RNR NAK, fatal to the run, if the worker's goroutine were slow to
// get going and took the peer's first packets before its posts.
func (s *Session) Start() {
	if s.done != nil {
		return
	}
	s.w.Step(s.clock())
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.w.Run(ctx)
	}()
}

// Stop stops the worker and waits for it, so that the endpoint's memory
// regions and LiveStats may be read; the host may then make another
// session. It is idempotent.
func (s *Session) Stop() {
	s.once.Do(func() {
		if s.done != nil {
			s.cancel()
			<-s.done
		}
		if s.h.session == s {
			s.h.session = nil
		}
	})
}
