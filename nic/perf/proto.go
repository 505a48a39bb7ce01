package perf

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// The connection exchange: JSON objects, one per line, over one TCP
// connection from client to server; docs/roceperf.md describes it byte
// by byte. Every message has a "type"; a receiver rejects a type it does
// not expect at that step. Version 3 added the latency tests, -D and
// --rx-depth to the hello; a version-2 server would take a latency
// test for a bandwidth run, so the versions must match.
const protoVersion = 3

// maxLine bounds one protocol line: a hello for 8192 QPs is about
// 800 KB.
const maxLine = 4 << 20

// qpWire is one QP's connection parameters. MAC is the sender's
// interface address, for the record: each side sends to the next hop its
// own kernel resolves for IP (the peer itself on a shared link).
type qpWire struct {
	QPN uint32 `json:"qpn"`
	PSN uint32 `json:"psn"`
	IP  string `json:"ip"`
	MAC string `json:"mac"`
}

// mrWire is a memory region as a peer addresses it.
type mrWire struct {
	RKey uint32 `json:"rkey"`
	VA   uint64 `json:"va"`
	Len  uint64 `json:"len"`
}

// hello opens a run (client → server).
type hello struct {
	Type      string     `json:"type"` // "hello"
	Version   int        `json:"version"`
	Op        string     `json:"op"`
	Transport string     `json:"transport"`
	QPs       int        `json:"qps"`
	Size      int        `json:"size"`
	Count     int        `json:"count"`
	MTU       int        `json:"mtu"`
	Depth     int        `json:"depth"`
	RTOUS     int64      `json:"rto_us"`
	BDP       int        `json:"bdp,omitempty"` // packets IRN's and FaSR's SR state is sized for (0: srBDP)
	CC        *CCOptions `json:"cc,omitempty"`  // both ends' congestion control (nil: none)
	TimeoutMS int64      `json:"timeout_ms"`
	QP        []qpWire   `json:"qp"`
	MR        mrWire     `json:"mr"`
	// Lat asks for a latency test (write-lat, send-lat, read-lat): the
	// server answers each WRITE or SEND with the same message back,
	// into the client's region at offset size or as a SEND.
	Lat bool `json:"lat,omitempty"`
	// RxDepth is the receives per QP the server posts for SEND (0: its
	// own choice).
	RxDepth int `json:"rx_depth,omitempty"`
	// DurationMS is set, and Count 0, when the client runs for a time
	// rather than a count: the done line says how many it sent.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Bidir asks the server to run the same messages back to the
	// client at the same time (-b): into RMR's RSlots slots for WRITE,
	// from them for READ, into the client's receives for SEND.
	Bidir  bool   `json:"bidir,omitempty"`
	RMR    mrWire `json:"rmr,omitempty"`
	RSlots int    `json:"rslots,omitempty"`
}

// accept answers a hello (server → client). Slots is how many size-byte
// slots the server's region holds: message i of a WRITE goes to, and of
// a READ comes from, slot i mod Slots.
type accept struct {
	Type    string   `json:"type"` // "accept"
	Version int      `json:"version"`
	QP      []qpWire `json:"qp"`
	MR      mrWire   `json:"mr"`
	Slots   int      `json:"slots"`
}

// errorMsg refuses a run (server → client) in place of accept.
type errorMsg struct {
	Type  string `json:"type"` // "error"
	Error string `json:"error"`
}

// progress tells the server the client is alive (client → server), at
// least every timeout/4 and at most once a second, during the run.
type progress struct {
	Type     string `json:"type"` // "progress"
	Messages int    `json:"messages"`
}

// started tells the server of a -b run that the client's endpoint runs
// (client → server, once, right after accept): the server's messages
// back may go. Sent before, they could reach the client's endpoint
// ahead of the receives it posted, and a SEND would meet none.
type started struct {
	Type string `json:"type"` // "started"
}

// doneMsg ends the run (client → server): what completed, and the first
// error if the client gave up.
type doneMsg struct {
	Type     string `json:"type"` // "done"
	Messages int    `json:"messages"`
	Bytes    int64  `json:"bytes"`
	Error    string `json:"error,omitempty"`
}

// result answers done (server → client): what the server verified.
type result struct {
	Type          string   `json:"type"` // "result"
	Messages      int      `json:"messages"`
	VerifiedBytes int64    `json:"verified_bytes"`
	Corrupt       int      `json:"corrupt"`
	FirstCorrupt  string   `json:"first_corrupt,omitempty"`
	Error         string   `json:"error,omitempty"`
	Server        Counters `json:"server"`
	// Reverse is the way back of a -b run, as the server sent it.
	Reverse *Direction `json:"reverse,omitempty"`
}

// Direction is one way of a bidirectional run: what its sender
// completed, how fast, and what was verified of it.
type Direction struct {
	Messages      int     `json:"messages"`
	Bytes         int64   `json:"bytes"`
	DurationS     float64 `json:"duration_s"`
	GoodputGbps   float64 `json:"goodput_gbps"`
	BWPeakGbps    float64 `json:"bw_peak_gbps"`
	MsgRateMpps   float64 `json:"msg_rate_mpps"`
	VerifiedBytes int64   `json:"verified_bytes"`
	Corrupt       int     `json:"corrupt"`
	FirstCorrupt  string  `json:"first_corrupt,omitempty"`
}

// directionOf summarises what sd sent.
func directionOf(sd *sender) *Direction {
	var r Report
	r.setRun(sd.lat, sd.first, sd.last, sd.size)
	return &Direction{Messages: r.Messages, Bytes: r.Bytes, DurationS: r.DurationS, GoodputGbps: r.GoodputGbps,
		BWPeakGbps: peakGbps(sd.posts, sd.dones, sd.size), MsgRateMpps: r.MsgRateMpps,
		VerifiedBytes: sd.verified, Corrupt: sd.corrupt, FirstCorrupt: sd.firstCorrupt}
}

// Counters are an endpoint's Counters as the report gives them.
type Counters struct {
	RetxPackets     uint64 `json:"retx_packets"`
	Timeouts        uint64 `json:"timeouts"`
	NAKsReceived    uint64 `json:"naks_received"`
	NAKsSent        uint64 `json:"naks_sent"`
	PacketsSent     uint64 `json:"packets_sent"`
	PacketsReceived uint64 `json:"packets_received"`
	// DCQCN's signals as the endpoint counted them, whatever the
	// congestion control: CE-marked packets received, CNPs sent (the
	// notification point's answers) and received.
	CEReceived   uint64 `json:"ce_received"`
	CNPsSent     uint64 `json:"cnps_sent"`
	CNPsReceived uint64 `json:"cnps_received"`
	// INTNoRoom: INT tails the endpoint left out for want of room in the
	// frame (nic.Stats.INTNoRoom); 0 unless frame memory is too small.
	INTNoRoom uint64 `json:"int_no_room,omitempty"`
	// CC is the congestion control's own figures, with --cc fixed or
	// dcqcn: rate cuts and the QPs' rates (min, mean, final).
	CC    *CCCounters       `json:"cc,omitempty"`
	Drops map[string]uint64 `json:"drops,omitempty"`
	// HODrops are the DCP header-only packets among Drops, by reason
	// (dataplane.Snapshot.HODrops).
	HODrops map[string]uint64 `json:"ho_drops,omitempty"`
	// Per-QP memory of the endpoint (nic.Endpoint.QPBytes): the QP
	// context — framework, transport, congestion control — and the
	// queues a NIC keeps in host memory (send and receive queues, DCP's
	// RetransQ).
	QPContextBytes int `json:"qp_context_bytes,omitempty"`
	QPQueueBytes   int `json:"qp_queue_bytes,omitempty"`
	// The endpoint's selective-repeat state (nic.SRState, one accounting
	// for every transport: what it keeps beyond Go-Back-N to accept
	// packets out of order and resend only what was lost): per QP (part
	// of qp_context_bytes), what it keeps once for all QPs (FaSR's SR
	// pool; 0 for the others), the total for the run, per-QP × QPs +
	// shared, and the BDP in packets it is sized for (IRN's bitmap span,
	// FaSR's pool; 0 for gbn and dcp).
	SRStateBytesPerQP int `json:"sr_state_bytes_per_qp"`
	SRSharedBytes     int `json:"sr_shared_bytes"`
	SRStateBytes      int `json:"sr_state_bytes"`
	SRBDPPackets      int `json:"sr_bdp_packets"`
	// DCP's counters, with --transport dcp.
	DCP *DCPCounters `json:"dcp,omitempty"`
	// IRN's counters, with --transport irn.
	IRN *IRNCounters `json:"irn,omitempty"`
	// FaSR's counters, with --transport fasr.
	FaSR *FaSRCounters `json:"fasr,omitempty"`
}

// IRNCounters are an IRN endpoint's counters (nic/irn.Stats) and its
// BDP-FC window.
type IRNCounters struct {
	OutOfOrder    uint64 `json:"out_of_order"`         // receiver: data packets placed ahead of the expected PSN
	NACKsSent     uint64 `json:"nacks_sent"`           // receiver: NACKs with a SACK
	Duplicates    uint64 `json:"duplicates"`           // receiver: data packets that had arrived before
	EarlyReads    uint64 `json:"early_reads"`          // receiver: READ requests ahead of the expected PSN, discarded
	NACKsReceived uint64 `json:"nacks_received"`       // sender: NACKs received
	SACKs         uint64 `json:"sacks"`                // sender: PSNs marked selectively acknowledged
	Recoveries    uint64 `json:"recoveries"`           // sender: loss recovery entered (NACK or timeout)
	Retransmits   uint64 `json:"recovery_retransmits"` // sender: packets resent in loss recovery
	ReadReissues  uint64 `json:"read_reissues"`        // sender: READs re-issued from a missing response
	TimeoutsLow   uint64 `json:"timeouts_low"`         // sender: RTO_low expiries (few packets in flight)
	TimeoutsHigh  uint64 `json:"timeouts_high"`        // sender: RTO_high expiries
	WindowFull    uint64 `json:"window_full"`          // sender: times BDP-FC held back a packet
	MaxInFlight   uint64 `json:"max_in_flight"`        // sender: most packets in flight on a QP
	Window        int    `json:"window_packets"`       // BDP-FC cap at MTU 1024
	BitmapBytes   int    `json:"bitmap_bytes_per_qp"`  // the four bitmaps' bytes per QP
}

// DCPCounters are a DCP endpoint's counters (nic/dcp.Stats) and its
// per-QP tracking state.
type DCPCounters struct {
	HOBounced           uint64 `json:"ho_bounced"`            // receiver: header-only packets returned to their sender
	HONotReturned       uint64 `json:"ho_not_returned"`       // receiver: header-only packets it could not return, dropped
	HOReturned          uint64 `json:"ho_returned"`           // sender: returned header-only packets received
	HORetransmits       uint64 `json:"ho_retransmits"`        // sender: packets resent for them
	HOStale             uint64 `json:"ho_stale"`              // sender: returned header-only packets for finished messages or older rounds
	HODuplicates        uint64 `json:"ho_duplicates"`         // sender: returned header-only packets already queued
	RetransQOverflows   uint64 `json:"retransq_overflows"`    // sender: returned header-only packets the full RetransQ dropped
	FallbackTimeouts    uint64 `json:"fallback_timeouts"`     // sender: coarse timeouts (sRetryNo incremented)
	FallbackRetransmits uint64 `json:"fallback_retransmits"`  // sender: packets resent by them
	WindowFull          uint64 `json:"window_full,omitempty"` // sender: times a QP waited for its window (dcp.Config.Window; roceperf sets none)
	Duplicates          uint64 `json:"duplicates"`            // receiver: data packets of finished messages or older rounds
	Unanchored          uint64 `json:"unanchored"`            // receiver: SEND packets returned because their offset was not known yet
	Recounts            uint64 `json:"recounts"`              // receiver: retry rounds adopted (counter reset)
	Poisoned            uint64 `json:"poisoned"`              // receiver: messages whose count a duplicate spoiled
	Deferred            uint64 `json:"deferred"`              // receiver: messages complete before an earlier one
	TrackingBytes       int    `json:"tracking_bytes_per_qp"` // receiver's per-message tracking state per QP
}

// ErrRefused: the server answered a hello with an error.
var errRefused = errors.New("server refused the run")

// conn is one side of the exchange: line reads and writes, each bounded
// by a deadline.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func newConn(c net.Conn) *conn { return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

// send writes v as one line within timeout.
func (c *conn) send(v any, timeout time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.c.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("send to %v: %w", c.c.RemoteAddr(), err)
	}
	return nil
}

// recv reads one line within timeout and returns its type and bytes.
func (c *conn) recv(timeout time.Duration) (string, []byte, error) {
	c.c.SetReadDeadline(time.Now().Add(timeout))
	var line []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) && len(line) <= maxLine {
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", nil, fmt.Errorf("receive from %v: line longer than %d bytes", c.c.RemoteAddr(), maxLine)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "", nil, fmt.Errorf("receive from %v: nothing in %v: %w", c.c.RemoteAddr(), timeout, err)
		}
		return "", nil, fmt.Errorf("receive from %v: %w", c.c.RemoteAddr(), err)
	}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &t); err != nil {
		return "", nil, fmt.Errorf("receive from %v: bad line: %w", c.c.RemoteAddr(), err)
	}
	return t.Type, line, nil
}

// expect reads one line of type want into v. An "error" line becomes
// errRefused with the peer's message. Progress lines are keepalives and
// skipped, each restarting the timeout: a server serving several
// clients at once sends them to a client that waits for its result
// while the others finish.
func (c *conn) expect(want string, v any, timeout time.Duration) error {
	typ, line, err := c.recv(timeout)
	for err == nil && typ == "progress" && want != "progress" {
		typ, line, err = c.recv(timeout)
	}
	if err != nil {
		return err
	}
	if typ == "error" && want != "error" {
		var m errorMsg
		json.Unmarshal(line, &m)
		return fmt.Errorf("%w: %s", errRefused, m.Error)
	}
	if typ != want {
		return fmt.Errorf("receive from %v: got a %q line, want %q", c.c.RemoteAddr(), typ, want)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("receive from %v: bad %q line: %w", c.c.RemoteAddr(), want, err)
	}
	return nil
}

func toWire(q nic.QPInfo) qpWire {
	return qpWire{QPN: q.QPN, PSN: uint32(q.PSN), IP: q.IP.String(), MAC: q.MAC.String()}
}

// fromWire checks a peer's QP and returns it as nic wants it, to be
// reached through mac at the given MTU.
func fromWire(w qpWire, mtu int, mac rocev2.MAC) (nic.QPInfo, error) {
	ip, err := netip.ParseAddr(w.IP)
	if err != nil {
		return nic.QPInfo{}, fmt.Errorf("QP %d: address %q: %w", w.QPN, w.IP, err)
	}
	if w.QPN == 0 || w.QPN > psn.Mask || w.PSN > psn.Mask {
		return nic.QPInfo{}, fmt.Errorf("QP %d PSN %d: out of the 24-bit range", w.QPN, w.PSN)
	}
	return nic.QPInfo{QPN: w.QPN, PSN: psn.New(w.PSN), MTU: mtu, IP: ip.Unmap(), MAC: mac}, nil
}

func mrToWire(m nic.MR) mrWire { return mrWire{RKey: m.Key, VA: m.VA, Len: m.Len} }
