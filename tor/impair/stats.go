package impair

import "rocetor/rocev2"

// Class is what a destroyed frame was, so that an experiment can tell
// whether a recovery mechanism's own frames met the loss.
type Class uint8

// Frame classes.
const (
	// ClassData is RoCEv2 data as an end host sent it: requests and
	// READ responses, link-shimmed originals among them. A NetRT
	// source ToR's pool retransmissions (seed 000 §III-B) are
	// byte-identical copies of the original and count here too: the
	// wire cannot tell them apart.
	ClassData Class = iota
	// ClassRetransmit is a frame the link shim marks as retransmitted
	// (Protego's copies, seed 003 §3.2).
	ClassRetransmit
	// ClassControl is what recovery and flow control send besides data:
	// the link shim's dummies, ACKs, loss notices and protect requests
	// (seed 003 §3), NetRT requests and unfulfilled notices (seed 000
	// §III-C), DCP header-only packets and ACKs (seed 002 §4), RoCE
	// ACKs, NAKs and CNPs, and PFC or PAUSE frames.
	ClassControl
	// ClassOther is every other frame: ARP, ND, LLDP, IP that is not
	// RoCEv2.
	ClassOther
	NumClasses
)

var classNames = [NumClasses]string{"data", "retransmission", "control", "other"}

func (c Class) String() string { return classNames[c] }

// Cause is the impairment that destroyed a frame.
type Cause uint8

// Causes, in the order the package doc gives.
const (
	CauseLoss     Cause = iota // Bernoulli loss
	CauseBurst                 // Gilbert–Elliott loss
	CauseCorrupt               // a simulated FCS error: the receiving MAC drops the frame
	CausePoliced               // over the rule's rate
	CauseOverflow              // a frame (or copy) to hold when the held frames already take hold_bytes
	NumCauses
)

var causeNames = [NumCauses]string{"loss", "burst", "corrupt", "policed", "overflow"}

func (c Cause) String() string { return causeNames[c] }

// classOf says what the frame m describes is. dcp is the classifier's DCP
// mode, without which DSCP bits are no DCP tag.
func classOf(m *rocev2.Meta, dcp bool) Class {
	if m.ShimOff != 0 {
		switch m.ShimType {
		case rocev2.ShimRetransmit:
			return ClassRetransmit
		case rocev2.ShimOriginal, rocev2.ShimWatch:
			// a numbered frame: what it carries says the rest
		default:
			return ClassControl
		}
	}
	switch m.Kind {
	case rocev2.KindMACControl, rocev2.KindLinkCtrl:
		return ClassControl
	case rocev2.KindRoCE:
		if dcp && (m.Tag == rocev2.DCPHeaderOnly || m.Tag == rocev2.DCPAck) {
			return ClassControl
		}
		// a CNP carries 16 reserved bytes the opcode table calls a
		// payload, but it is congestion control's, not data
		if m.Opcode != rocev2.NetRTOpcode && m.Opcode != rocev2.CNP && (m.Opcode.IsRequest() || m.Opcode.HasPayload()) {
			return ClassData
		}
		return ClassControl
	}
	return ClassOther
}

// DirStats are the counters of one direction of a port. They only grow:
// a new rule set (Control.Update, SetPort) starts no counter afresh, so
// they export as Prometheus counters.
type DirStats struct {
	Matched uint64 // frames a rule's filter matched
	// Destroyed counts the frames the impairment destroyed, by what they
	// were and why.
	Destroyed [NumClasses][NumCauses]uint64
	// Trimmed counts DCP data packets that loss or burst picked and a
	// trim rule sent on as header-only packets instead of destroying
	// them; they are not in Destroyed.
	Trimmed    uint64
	Duplicated uint64 // copies sent
	DupFailed  uint64 // copies not made for want of a free frame
	Reordered  uint64 // frames held back by reorder
	Delayed    uint64 // frames held by delay
}

// Caused returns the frames of every class destroyed for cause c.
func (d *DirStats) Caused(c Cause) uint64 {
	var n uint64
	for k := range d.Destroyed {
		n += d.Destroyed[k][c]
	}
	return n
}

// Of returns the frames of class k destroyed for any cause.
func (d *DirStats) Of(k Class) uint64 {
	var n uint64
	for _, v := range d.Destroyed[k] {
		n += v
	}
	return n
}

// Stats are the counters of one Port.
type Stats struct {
	Port string
	Dir  [2]DirStats // by Direction
	// Held and HeldBytes count the frames held now in both directions,
	// including those held under a rule set since replaced; HeldBytes
	// never exceeds hold_bytes.
	Held, HeldBytes int
	MaxHeldBytes    int // high-water mark of HeldBytes
	// Released counts held frames taken out at their deadline to be
	// sent on (egress) or delivered (ingress); a frame the inner port
	// then refuses is held again and released again.
	Released uint64
	Flushed  uint64 // held frames freed by Flush
	Sets     uint64 // rule sets adopted
}

// Counters returns the live counters. Call it only from the worker's
// goroutine (or after the worker stopped); other goroutines use Snapshot.
func (p *Port) Counters() Stats { return p.st }

// Snapshot returns a copy of the counters as last published. It is safe
// to call from any goroutine.
func (p *Port) Snapshot() Stats { return p.pub.Load() }

// Publish stores the counters for Snapshot now, at worker time now. Call
// it from the worker's goroutine, or after the worker stopped (a
// simulator at the end of a run).
func (p *Port) Publish(now int64) { p.pub.Store(now, &p.st) }
