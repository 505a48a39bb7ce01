package perf

import (
	"fmt"
	"io"
	"net"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
)

// Server answers clients in rounds (round.go): --clients of them at
// once on one endpoint, each with its own QPs and region; by default
// one. A client arriving during a round waits in the listen backlog
// (and gives up after its --timeout).
type Server struct {
	o      ServerOptions
	dev    Device
	out    io.Writer // one JSON object per run
	log    io.Writer
	runs   int
	rounds int
	// capture is --pcap's, armed on every round's session.
	capture *dataplane.Capture
	// metrics is --metrics' (nil without).
	metrics *serveMetrics
}

// NewServer returns a server of o's runs on dev: it prints one JSON
// object per run (ServerReport) on out and logs to log. Serve runs it
// on a listener; o.Pcap and o.Metrics are Serve's (the package
// function's) to set up.
func NewServer(o ServerOptions, dev Device, out, log io.Writer) *Server {
	return &Server{o: o, dev: dev, out: out, log: log}
}

// ServeMetrics counts the server's runs and its endpoints' packets from
// now on and serves them as Prometheus metrics on http://addr/metrics;
// it returns the address it listens on and a function that stops it.
func (sv *Server) ServeMetrics(addr string) (net.Addr, func(), error) {
	sv.metrics = newServeMetrics()
	return serveMetricsHTTP(addr, sv.metrics)
}

// ServerReport is what serve prints on stdout for each run, one JSON
// object per line: the run as the client described it, what the server
// verified, its endpoint's counters, and the error if the run failed.
type ServerReport struct {
	Run int `json:"run"`
	// Round numbers the rounds; Clients is how many clients its
	// endpoint served at once (whose QPs its counters cover).
	Round          int    `json:"round"`
	Clients        int    `json:"clients"`
	Client         string `json:"client"`
	Op             string `json:"op,omitempty"`
	Transport      string `json:"transport,omitempty"`
	Size           int    `json:"size,omitempty"`
	Count          int    `json:"count,omitempty"`
	QPs            int    `json:"qps,omitempty"`
	ClientMessages int    `json:"client_messages"`
	Messages       int    `json:"messages"`
	VerifiedBytes  int64  `json:"verified_bytes"`
	Corrupt        int    `json:"corrupt"`
	FirstCorrupt   string `json:"first_corrupt,omitempty"`
	Counters
	Pcap  *PcapStats `json:"pcap,omitempty"`
	Error string     `json:"error,omitempty"`
}

func (r *ServerReport) summary() string {
	return fmt.Sprintf("%s %d × %d B on %d QPs over %s: client completed %d; verified %d messages, %d bytes, %d corrupt",
		r.Op, r.Count, r.Size, r.QPs, r.Transport, r.ClientMessages, r.Messages, r.VerifiedBytes, r.Corrupt)
}

// plan is what the server sets up for a hello.
type plan struct {
	h     hello
	op    nic.Op
	slots int // WRITE, READ: size-byte slots of the region
	rq    int // SEND: receives posted per QP
	mem   int // bytes of the region
}

// planRun checks a hello and sizes the run; its errors go back to the
// client as the reason for refusing.
func (sv *Server) planRun(h hello) (plan, error) {
	p := plan{h: h, op: Ops[h.Op]}
	switch {
	case h.Version != protoVersion:
		return p, fmt.Errorf("protocol version %d, this server speaks %d", h.Version, protoVersion)
	case p.op == 0:
		return p, fmt.Errorf("unknown op %q (want write, send or read)", h.Op)
	case !KnownTransport(h.Transport):
		return p, fmt.Errorf("unknown transport %q (this server has: %s)", h.Transport, TransportNames())
	case !Supports(h.Transport, p.op):
		return p, fmt.Errorf("transport %s does not do %s", h.Transport, h.Op)
	case h.QPs < 1 || h.QPs > MaxQPs || len(h.QP) != h.QPs:
		return p, fmt.Errorf("%d QPs with %d described: want 1 to %d", h.QPs, len(h.QP), MaxQPs)
	case h.Size < 1 || h.Size > nic.MaxMessage:
		return p, fmt.Errorf("bad size %d: want 1 B to %d B", h.Size, nic.MaxMessage)
	case h.Count < 1 && h.DurationMS <= 0, h.Count < 0:
		return p, fmt.Errorf("bad count %d", h.Count)
	case h.Lat && (h.QPs != 1 || h.Depth != 1):
		return p, fmt.Errorf("a latency test with %d QPs and depth %d: want one QP, one message in flight", h.QPs, h.Depth)
	case h.RxDepth < 0 || h.RxDepth > 4096:
		return p, fmt.Errorf("bad rx depth %d: want 0 to 4096", h.RxDepth)
	case h.Bidir && h.Lat:
		return p, fmt.Errorf("a latency test has no bidirectional form")
	case h.Bidir && p.op != nic.OpSend && (h.RSlots < 1 || uint64(h.RSlots)*uint64(h.Size) > h.RMR.Len):
		return p, fmt.Errorf("bidirectional: the client's region of %d B cannot hold %d slots of %d B", h.RMR.Len, h.RSlots, h.Size)
	case h.Bidir && int64(h.QPs)*int64(h.Depth)*int64(h.Size) > MaxClientMem:
		return p, fmt.Errorf("bidirectional: %d QPs × depth %d × %d B of buffers for the way back, above %d B", h.QPs, h.Depth, h.Size, MaxClientMem)
	case !ValidMTU(h.MTU):
		return p, fmt.Errorf("bad MTU %d: want 256, 512, 1024 or 2048", h.MTU)
	case h.Depth < 1 || h.Depth > MaxDepth:
		return p, fmt.Errorf("bad depth %d: want 1 to %d", h.Depth, MaxDepth)
	case h.TimeoutMS < 1:
		return p, fmt.Errorf("bad timeout %d ms", h.TimeoutMS)
	case h.RTOUS < 0 || h.RTOUS > 10e6:
		return p, fmt.Errorf("bad RTO %d µs", h.RTOUS)
	case h.BDP < 0 || h.BDP > maxBDP:
		return p, fmt.Errorf("bad BDP %d packets: want 1 to %d", h.BDP, maxBDP)
	}
	if _, err := NewTransport(h.Transport, time.Duration(h.RTOUS)*time.Microsecond, h.BDP); err != nil {
		return p, fmt.Errorf("transport %s: %w", h.Transport, err)
	}
	if _, err := h.CC.Build(); err != nil {
		return p, err
	}
	if err := h.CC.Pairs(h.Transport); err != nil {
		return p, err
	}
	limit := sv.o.MaxMR
	if h.Lat && p.op != nic.OpRead {
		return p, sv.planLat(&p)
	}
	switch p.op {
	case nic.OpWrite, nic.OpRead:
		// Every message its own slot while they fit; past that, slots
		// come in multiples of the QP count, so that each slot is only
		// ever written by one QP and its last WRITE is known.
		fit := limit / h.Size
		if h.Count == 0 {
			// A timed run of small messages would otherwise have
			// millions of slots to fill (READ) or check (WRITE);
			// 65536 slots verify as well.
			fit = max(min(fit, 1<<16), min(fit, h.QPs))
		}
		switch {
		case h.Count > 0 && h.Count <= fit:
			p.slots = h.Count
		case fit >= h.QPs:
			p.slots = fit / h.QPs * h.QPs
		default:
			return p, fmt.Errorf("bad size: %d QPs × %d B exceed the server's --max-mr of %d B", h.QPs, h.Size, limit)
		}
		p.mem = p.slots * h.Size
	case nic.OpSend:
		// A receive is posted again only after the server has checked
		// it, and the client may have sent up to its depth more by
		// then; a SEND that finds no receive fails the run (an RNR
		// NAK, which the transports do not retry). So post at least
		// twice the depth, and as many more as 16 MiB allows (up to
		// 4096 per QP): the server may then fall that many messages
		// behind — a descheduled goroutine, a GC pause — with no RNR.
		p.rq = max(2*h.Depth, min(4096, (16<<20)/(h.QPs*h.Size)))
		if h.RxDepth > 0 {
			// The client's -r, as perftest's: fewer receives than
			// its depth risk the RNR that fails the run.
			p.rq = h.RxDepth
		}
		if int64(h.QPs)*int64(p.rq)*int64(h.Size) > int64(limit) {
			return p, fmt.Errorf("bad size: %d QPs × %d receives × %d B exceed the server's --max-mr of %d B",
				h.QPs, p.rq, h.Size, limit)
		}
		p.mem = h.QPs * p.rq * h.Size
	}
	return p, nil
}

// slot returns the region's slot k.
func (r *serverRun) slot(k int) []byte { return r.buf[k*r.p.h.Size : (k+1)*r.p.h.Size] }
