package nic

import (
	"reflect"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Transport owns the reliability logic of every QP of one endpoint: what
// each requester sends next, what an ACK, NAK or read response does to
// it, what the responder does with each request packet, and what happens
// when a QP's retransmission timer expires. The framework does the rest —
// parsing, the QP table, building frames from the send queue and the
// memory regions, placing data, completions, pacing, timers — and offers
// it through Ctx.
//
// A transport is created for one endpoint and keeps its per-QP state in
// a slice indexed by QP.Index, sized by Init, so the packet path neither
// allocates nor looks up maps. All methods run on the worker's goroutine;
// the packet a method is handed and its Payload are valid only during
// the call. Request and Response consume the packet unless they call
// Ctx.Drop with a reason.
type Transport interface {
	// Name is the transport's short name, e.g. "gbn".
	Name() string
	// Init sizes the per-QP state for QP indices 0..maxQPs-1. NewEndpoint
	// calls it once.
	Init(maxQPs int)
	// StateBytes returns the bytes of per-QP state the transport keeps.
	StateBytes() int
	// SRState returns the transport's selective-repeat memory, counted
	// as SRState says: the same accounting for every transport.
	SRState() SRState
	// Open resets q's state when q is connected; q.Una() is its first PSN
	// and q.EPSN() the first PSN it expects from the peer.
	Open(q *QP)
	// Next sends q's next requester packet, if any, with Ctx.SendRequest,
	// and reports whether it sent one. The framework calls it while q has
	// work, the data queue has room and congestion control allows.
	Next(c *Ctx, q *QP) bool
	// Request handles a request packet (WRITE, SEND, READ request) for
	// q's responder.
	Request(c *Ctx, q *QP, p *Pkt)
	// Response handles a response packet (ACK, NAK, read response) for
	// q's requester.
	Response(c *Ctx, q *QP, p *Pkt)
	// Timeout is called when the timer q armed with Ctx.SetTimer expires.
	Timeout(c *Ctx, q *QP)
}

// Decorator is an optional interface of a Transport. The framework calls
// Decorate for every request packet it builds, after filling the
// standard fields and before writing the frame, so a transport can add
// what its protocol carries without touching the framework: DCP sets
// s.DCP, the DCP tag in s.DSCP and s.MSN/SSN/Retry (seed 002 §4.4; the
// RETH fields are filled for every WRITE packet, and Build writes them
// wherever the opcode or the DCP layout carries a RETH); IRN or FaSR may
// set AckReq differently.
type Decorator interface {
	Decorate(q *QP, r *Request, s *rocev2.Spec)
}

// AckDecorator is an optional interface of a Transport. The framework
// calls DecorateAck for every ACK and NAK it builds — Ctx.SendAck and
// the coalesced ACKs of Ctx.ScheduleAck — after filling the standard
// fields (syndrome, PSN, the AETH MSN) and before writing the frame, so
// a transport's acknowledgements can say what its protocol does: DCP
// tags them 01 and carries eMSN and rRetryNo in its extension header,
// with the PSN of the last packet eMSN covers (seed 002 §4.5).
//
// In a SACK fabric (the transport's Classifying sets Classifier.SACK)
// s.SACK is already set, so every ACK carries a SACKETH, zero unless the
// transport fills s.SACKPSN, s.SACKFlags and s.LostCnt here. DecorateAck
// runs synchronously inside SendAck, so a value for one ACK — IRN's
// triggering PSN of a NACK — can be left in the transport's per-QP state
// (or a field it sets just before calling SendAck) and read here; a
// coalesced ACK reads the per-QP state as it is at the end of the batch.
type AckDecorator interface {
	DecorateAck(q *QP, s *rocev2.Spec)
}

// Classifying is an optional interface of a Transport whose packets the
// worker must parse with other classifier settings: DCP's carry an
// extension header that only rocev2.Classifier{DCP: true} finds; IRN's
// and FaSR's ACKs a SACKETH that rocev2.Classifier{SACK: true} finds (the
// endpoint then writes one into every ACK it builds, and fills Pkt.SACK).
// Whoever builds the endpoint's worker asks Endpoint.Classifier for its
// classifier.
type Classifying interface {
	// Classifier returns c with the settings the transport needs.
	Classifier(c rocev2.Classifier) rocev2.Classifier
}

// HostMemory is an optional interface of a Transport that keeps per-QP
// queues a NIC would keep in host memory rather than in its QP context
// (DCP's retransmission queue, seed 002 §4.3): Endpoint.QPBytes counts
// them with the send and receive queues.
type HostMemory interface {
	// QueueBytes returns the bytes of such queues per QP.
	QueueBytes() int
}

// SRState is a transport's selective-repeat (SR) memory, counted one way
// for every transport (docs/experiments.md, "SR memory"): the bytes it
// keeps, beyond what Go-Back-N keeps, to accept packets out of order and
// resend only what was lost — loss-tracking bitmaps, recovery and
// retransmission pointers, pointers into a shared pool, per-message
// counters — as the seeds count it (seed 001 §V-A: IRN's SR state and
// bitmaps per QP, FaSR's SR state pointer per QP and its shared pool).
//
// Not counted: what gbn keeps too (a send pointer, an ACK count, retry
// and backoff, flags) or the framework keeps for every RC QP (Una,
// SndMax, the expected PSN and MSN, the queues); the numbering every
// out-of-order placer needs for SENDs (nic.SendOrder, the next SSN to
// complete, the SSN tables in host memory), the same in irn, fasr and
// dcp; host memory (HostMemory); Go's slice headers and padding. Sizes
// are the fields' own, measured with FieldBytes; what a QP costs in all
// is measured on the heap (nictest.EndpointHeap).
type SRState struct {
	// PerQP is the SR state in each QP's context, both sides.
	PerQP int
	// Shared is the SR state the endpoint keeps once for all its QPs
	// (FaSR's two-level pool, seed 001 §III-C); 0 for the others.
	Shared int
	// BDP is the bandwidth-delay product in packets the state is sized
	// for — IRN's bitmap span (a power of two ≥ its window), FaSR's pool
	// — or 0 when the state does not depend on it (gbn, dcp).
	BDP int
}

// Bytes returns the SR state of an endpoint with qps QPs.
func (s SRState) Bytes(qps int) int { return s.PerQP*qps + s.Shared }

// FieldBytes returns the sum of the sizes of the named fields of struct
// type t, padding excluded: a transport's SR share of its per-QP state.
// It panics on a name t lacks, so that renaming a field cannot silently
// drop it from the accounting.
func FieldBytes(t reflect.Type, names ...string) int {
	n := 0
	for _, name := range names {
		f, ok := t.FieldByName(name)
		if !ok {
			panic("nic.FieldBytes: " + t.String() + " has no field " + name)
		}
		n += int(f.Type.Size())
	}
	return n
}

// Request describes the request packet being built, for a Decorator.
type Request struct {
	Op         Op
	MSN        uint32 // the work request's message sequence number on its QP: 0, 1, 2, … (24 bits)
	Index      int    // the packet's index in its message (a READ request: the first response it asks for)
	Count      int    // the message's packets
	Retransmit bool   // the PSN was sent before
}

// CC is a congestion control: it decides when each QP may send its next
// data packet (a request or a read response), on top of the port's
// shaper, and reacts to congestion signals. Like a Transport it keeps
// per-QP state in a slice indexed by QP.Index and runs on the worker's
// goroutine.
type CC interface {
	Name() string
	Init(maxQPs int)
	StateBytes() int
	Open(q *QP)
	// Ready returns the earliest time q may send its next data packet;
	// a time at or before now means now.
	Ready(q *QP, now int64) int64
	// Sent records a data frame of n bytes sent by q.
	Sent(q *QP, now int64, n int)
	// CNP is called for a congestion notification packet addressed to q
	// (the reaction point of DCQCN).
	CNP(q *QP, now int64)
	// Marked is called for a received frame of q with ECN CE (the
	// notification point of DCQCN); it reports whether to answer with a
	// CNP to the peer QP, which the framework sends on the control queue.
	Marked(q *QP, now int64) (cnp bool)
}

// RTTSampler is an optional interface of a CC whose congestion signal is
// the round-trip time, as TIMELY's (nic/cc.Timely): the endpoint shows it
// every request packet it sends and every advance of the requester's
// cumulative acknowledgement, both on the worker's clock (Ctx.Now) — the
// send and ACK timestamps an RNIC takes. NewEndpoint asserts it once, so
// a CC without it (Fixed, DCQCN) costs nothing. Read responses are not
// shown: nothing acknowledges them. HPCC (nic/cc.HPCC) takes it for
// Probe alone, to ask for the ACK that reopens its window.
type RTTSampler interface {
	// Probe reports whether the request packet q is about to build — PSN
	// p, payload bytes of data, retx if p was sent before — should ask
	// for an ACK (BTH AckReq), so that the responder acknowledges it at
	// once rather than with later packets (ACK coalescing would add the
	// time those take to the sample). It must not change state: the
	// packet may yet not be sent.
	Probe(q *QP, p psn.PSN, payload int, retx bool) bool
	// Requested is called after Sent for each request packet q sent, with
	// its PSN, payload bytes, whether it was sent before and whether it
	// asks for an ACK (the last packet of a message or READ, one Probe
	// chose, or one the transport's Decorator marked).
	Requested(q *QP, now int64, p psn.PSN, payload int, retx, ackReq bool)
	// Acked is called after a response moved q's cumulative
	// acknowledgement forward: every PSN up to and including a is
	// acknowledged (by an ACK, or a read response).
	Acked(q *QP, now int64, a psn.PSN)
}

// Pkt is a received RoCEv2 packet as a transport sees it: the fields it
// decides on, parsed once. Fields of headers the opcode does not carry
// are zero. Payload and Frame alias frame memory and are valid only
// during the call.
type Pkt struct {
	Op       rocev2.Opcode
	PSN      psn.PSN
	AckReq   bool
	ECN      uint8
	Syndrome rocev2.Syndrome // AETH
	MSN      uint32          // AETH
	VA       uint64          // RETH
	RKey     uint32          // RETH
	DMALen   uint32          // RETH
	// The SACKETH of an RC ACK, when the transport asked for
	// Classifier.SACK (HasSACK): the SACK PSN (IRN's triggering PSN,
	// FaSR's SACK or FNACK PSN), the flags (rocev2.SACKFNACK,
	// rocev2.SACKLostOverflow) and FaSR's lost-cnt.
	HasSACK   bool
	SACKFlags uint8
	LostCnt   uint8
	SACK      psn.PSN
	Payload   []byte
	Frame     []byte
	Meta      *rocev2.Meta
	p         *dataplane.Packet
}

// noCC lets every QP send at once.
type noCC struct{}

func (noCC) Name() string                 { return "none" }
func (noCC) Init(int)                     {}
func (noCC) StateBytes() int              { return 0 }
func (noCC) Open(*QP)                     {}
func (noCC) Ready(_ *QP, now int64) int64 { return now }
func (noCC) Sent(*QP, int64, int)         {}
func (noCC) CNP(*QP, int64)               {}
func (noCC) Marked(*QP, int64) bool       { return false }
