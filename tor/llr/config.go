package llr

import (
	"errors"
	"fmt"
	"math"
)

// ErrConfig wraps every configuration error; the message names the field.
var ErrConfig = errors.New("llr: invalid config")

// Mode says whether the receiver preserves the order of the link.
type Mode uint8

// Modes (seed 003, "Operation modes", §3).
const (
	// Blocking holds out-of-order packets in the reordering buffer and
	// releases them in sequence (Protego's default mode, §3.3).
	Blocking Mode = iota
	// NonBlocking forwards every new packet at once and still recovers
	// and de-duplicates (ProtegoNB).
	NonBlocking
)

// String returns "blocking" or "nb", as tord's YAML spells them.
func (m Mode) String() string {
	if m == NonBlocking {
		return "nb"
	}
	return "blocking"
}

// ParseMode parses "blocking" or "nb".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "blocking", "":
		return Blocking, nil
	case "nb":
		return NonBlocking, nil
	}
	return 0, fmt.Errorf("%w: mode %q, want blocking or nb", ErrConfig, s)
}

// Defaults of the zero fields of Config.
const (
	DefaultTxBuffer   = 256 << 10
	DefaultRxBuffer   = 256 << 10
	DefaultPause      = 192 << 10
	DefaultResume     = 64 << 10
	DefaultAckTimeout = int64(1e6) // 1 ms
	DefaultTargetLoss = 1e-9
	// MaxCopies bounds Eq. 1: a loss rate near 1 would otherwise ask for
	// an unbounded number of copies of every lost packet.
	MaxCopies = 8
)

// MaxPorts bounds the ports a Stage serves; per-port state and counters
// are fixed arrays indexed by the worker's port index.
const MaxPorts = 64

// Window is the span of link sequences in flight on one link: the sender
// never has more than Window sequences unacknowledged (beyond that it
// sends unprotected), and the receiver tracks arrivals in a Window-bit
// map from ackNo. It is half the space psn.Link can compare (2^16), so
// comparisons across the era stay exact (§3.5: "not more than N/2
// apart").
const Window = 1 << 15

// Config is the stage's configuration. Both ends of a protected link
// must run the same Mode; the other fields are each switch's own.
type Config struct {
	// Ports are the protected ports, as a bit set of worker port indices
	// (bit i: port i). The switch at the other end of each link protects
	// its side too: a port is both the sender towards its neighbour and
	// the receiver from it.
	Ports uint64
	Mode  Mode
	// TxBuffer is the byte budget of the frames kept per port, held or
	// copied (TxFrames), until the receiver's cumulative ACK covers
	// them; 0 means DefaultTxBuffer.
	TxBuffer int
	// TxFrames is how many frames per port the Tx buffer may keep
	// themselves, held in the worker's frame memory
	// (dataplane.Mem.Hold) until acknowledged, rather than copy; past
	// it, it copies. What fits is reckoned in TxBuffer's bytes either
	// way. 0: copies only. The frame memory must have them to spare
	// (tord's pipeline sets it from xdp.frames).
	TxFrames int
	// RxBuffer is the byte budget of the reordering buffer per port
	// (Blocking); 0 means DefaultRxBuffer.
	RxBuffer int
	// Pause and Resume are the reordering-buffer levels (bytes) at which
	// the receiver sends a PFC pause, and a resume, to the sender
	// (Algorithm 2); 0 means DefaultPause, DefaultResume. Resume < Pause
	// ≤ RxBuffer: the gap is the hysteresis.
	Pause, Resume int
	// AckTimeout is ackNoTimeout (§3.5) in nanoseconds: a missing
	// sequence not recovered this long after its loss was detected is
	// skipped. 0 means DefaultAckTimeout.
	AckTimeout int64
	// NoticeRetry is how long after a loss notice the receiver names a
	// still-missing head of line again (a lost notice, or every copy
	// lost); 0 means AckTimeout/4. Protego relies on copies and the
	// timeout alone; the retry costs one small frame and saves a stall.
	NoticeRetry int64
	// DummyInterval spaces dummies that repeat the same sequence position
	// (nothing new sent since the last one, still unacknowledged): a new
	// position is announced at once (§3.2), a repeat only this often, so
	// an idle link with a lost ACK is not flooded. It also bounds how
	// long the neighbour's copy of ackNo stays stale: an explicit ACK
	// goes on the control queue when nothing carried one for this long.
	// 0 means AckTimeout/8.
	DummyInterval int64
	// PauseTime is how long (ns) one PFC pause of the reordering buffer
	// lasts; the receiver refreshes it at half that while the buffer
	// stays above Resume, so a lost resume stalls the link this long at
	// most. 0 means AckTimeout/4. It is sent in quanta at the port's
	// PFC rate, 0xffff at most.
	PauseTime int64
	// TargetLoss and ActualLoss are the loss rates of Eq. 1 (§3.4);
	// TargetLoss 0 means DefaultTargetLoss, ActualLoss 0 means the rate
	// the sender measures (sequences named in loss notices over
	// sequences sent).
	TargetLoss, ActualLoss float64
	// Copies fixes the retransmitted copies per lost packet; 0 uses
	// Eq. 1.
	Copies int
	// RetxRate (bit/s) and RetxBurst (bytes) bound the retransmissions
	// the neighbour's loss notices can draw from a port's Tx buffer,
	// copies included: a token bucket per port, going beyond Protego,
	// which answers every notice at once. Notices beyond it wait in
	// their ring (reqCap) and are served as the bucket refills, so a
	// neighbour that asks for too much, or a forged stream of notices,
	// gets retransmissions at RetxRate and no more, and the data queue
	// below the strict-priority retransmit queue keeps the rest of the
	// link. 0 means half the port's shaped rate (5 Gbit/s unshaped) and
	// TxBuffer: every frame kept, once, at once.
	RetxRate  uint64
	RetxBurst int
	// MaxFrame is the longest frame (bytes, without FCS) the link takes;
	// a frame that would exceed it with the shim goes unprotected. 0: no
	// limit but the frame memory.
	MaxFrame int
	// PFCPriority is the 802.1Qbb priority of the data queue the
	// receiver pauses; 0 means 3, the priority of DefaultEgress's "data"
	// queue. (Priority 0 cannot be chosen: the data queue is never
	// priority 0 in this project.)
	PFCPriority int
	// Dormant starts every protected port's sender switched off: the
	// receivers run, the senders send frames as they are until
	// Stage.SetActive turns them on (Protego lies dormant until a link
	// corrupts, §2.3).
	Dormant bool
	// Watch makes a sender that is switched off still number what it
	// sends (shim type watch: 8 bytes a frame, no copy, no
	// retransmission), so the receiver counts the link's losses while
	// it lies dormant and the corruption monitor can see a link start
	// to corrupt where no interface counter does (veth, software
	// links). Both ends should agree; a receiver of either setting
	// understands both.
	Watch bool
	// Queue names, resolved per port at the first batch; empty means the
	// DefaultEgress names. Only frames the pipeline puts on DataQueue
	// are protected: see the package doc.
	DataQueue, RetransmitQueue, ControlQueue, IdleQueue string
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.TxBuffer == 0 {
		c.TxBuffer = DefaultTxBuffer
	}
	if c.RxBuffer == 0 {
		c.RxBuffer = DefaultRxBuffer
	}
	if c.Pause == 0 {
		c.Pause = DefaultPause
	}
	if c.Resume == 0 {
		c.Resume = DefaultResume
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = DefaultAckTimeout
	}
	if c.NoticeRetry == 0 {
		c.NoticeRetry = c.AckTimeout / 4
	}
	if c.DummyInterval == 0 {
		c.DummyInterval = c.AckTimeout / 8
	}
	if c.PauseTime == 0 {
		c.PauseTime = c.AckTimeout / 4
	}
	if c.TargetLoss == 0 {
		c.TargetLoss = DefaultTargetLoss
	}
	if c.PFCPriority == 0 {
		c.PFCPriority = 3
	}
	if c.DataQueue == "" {
		c.DataQueue = "data"
	}
	if c.RetransmitQueue == "" {
		c.RetransmitQueue = "retransmit"
	}
	if c.ControlQueue == "" {
		c.ControlQueue = "control"
	}
	if c.IdleQueue == "" {
		c.IdleQueue = "idle"
	}
	return c
}

// Validate checks c (with defaults applied) and names the first bad
// field as tord's YAML spells it.
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(field, f string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(f, a...))
	}
	switch {
	case c.Mode > NonBlocking:
		return bad("mode", "%d, want blocking or nb", c.Mode)
	case c.TxBuffer < 2*MaxFrameBytes:
		return bad("tx_buffer", "%d bytes, want ≥ %d (two jumbo frames)", c.TxBuffer, 2*MaxFrameBytes)
	case c.TxBuffer > 1<<30:
		return bad("tx_buffer", "%d bytes, want ≤ 1GiB", c.TxBuffer)
	case c.TxFrames < 0 || c.TxFrames > Window:
		return bad("tx_frames", "%d, want 0 to %d", c.TxFrames, Window)
	case c.RxBuffer < 2*MaxFrameBytes:
		return bad("rx_buffer", "%d bytes, want ≥ %d (two jumbo frames)", c.RxBuffer, 2*MaxFrameBytes)
	case c.RxBuffer > 1<<30:
		return bad("rx_buffer", "%d bytes, want ≤ 1GiB", c.RxBuffer)
	case c.Pause <= 0 || c.Pause > c.RxBuffer:
		return bad("pause", "%d bytes, want 1 to rx_buffer (%d)", c.Pause, c.RxBuffer)
	case c.Resume <= 0 || c.Resume >= c.Pause:
		return bad("resume", "%d bytes, want 1 to below pause (%d): the gap is the hysteresis", c.Resume, c.Pause)
	case c.AckTimeout < 0:
		return bad("ack_timeout", "negative")
	case c.NoticeRetry < 0:
		return bad("notice_retry", "negative")
	case c.DummyInterval < 0:
		return bad("dummy_interval", "negative")
	case c.PauseTime < 0:
		return bad("pause_time", "negative")
	case !(c.TargetLoss > 0 && c.TargetLoss < 1):
		return bad("target_loss", "%g, want in (0, 1)", c.TargetLoss)
	case !(c.ActualLoss >= 0 && c.ActualLoss < 1):
		return bad("actual_loss", "%g, want 0 (measured) or in (0, 1)", c.ActualLoss)
	case c.Copies < 0 || c.Copies > MaxCopies:
		return bad("copies", "%d, want 0 (Eq. 1) to %d", c.Copies, MaxCopies)
	case c.RetxBurst < 0 || c.RetxBurst != 0 && c.RetxBurst < MaxFrameBytes:
		return bad("retx_burst", "%d bytes, want 0 (tx_buffer) or ≥ %d (a jumbo frame)", c.RetxBurst, MaxFrameBytes)
	case c.MaxFrame != 0 && c.MaxFrame < 64:
		return bad("max_frame", "%d bytes, want 0 or ≥ 64", c.MaxFrame)
	case c.PFCPriority < 0 || c.PFCPriority > 7:
		return bad("pfc_priority", "%d, want 1–7", c.PFCPriority)
	}
	return nil
}

// MaxFrameBytes is the longest frame the buffers are sized for.
const MaxFrameBytes = 9216

// DefaultRetxRate is RetxRate on an unshaped port, bit/s; a shaped one
// gets half its rate.
const DefaultRetxRate = 5e9

// MaxNoticeFrames bounds what one loss notice makes the sender send: it
// names at most 255 sequences (its Count), each retransmitted in at
// most MaxCopies copies, and only sequences still in the Tx buffer.
const MaxNoticeFrames = 255 * MaxCopies

// Copies is Eq. 1 of seed 003 (§3.4): the copies of a lost packet to
// retransmit so that the effective loss rate meets target when the link
// loses actual: ⌈log(target)/log(actual) − 1⌉, at least 1 and at most
// MaxCopies. An actual rate of 0 (nothing measured yet) or outside (0, 1)
// gives 1.
func Copies(target, actual float64) int {
	if !(actual > 0 && actual < 1) || !(target > 0 && target < 1) {
		return 1
	}
	// The tolerance keeps an exact ratio (10⁻⁸ over 10⁻⁴ is 2) from
	// rounding up on a floating-point excess.
	c := math.Ceil(math.Log(target)/math.Log(actual) - 1 - 1e-9)
	switch {
	case c < 1 || math.IsNaN(c):
		return 1
	case c > MaxCopies:
		return MaxCopies
	}
	return int(c)
}
