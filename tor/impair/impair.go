package impair

import "rocetor/rocev2"

// fate is what a frame's rule left to do with a frame it did not destroy.
type fate struct {
	addr uint64 // the frame (trim may put it in another)
	len  uint16 // the frame's length (trim shortens it)
	hold int64  // how long to hold it, ns; 0 sends it on now
	dup  bool   // a copy goes along
}

// impair runs the first rule of direction d that matches the frame at
// addr. It returns false when the rule destroyed the frame (given back
// to Mem and counted); otherwise what is left to do.
//
// The impairments come in the order a frame meets them: on egress the
// switch's policer and then the wire (burst loss, loss, corruption); on
// ingress the wire and then the policer. The Gilbert–Elliott chain steps
// on every frame that reaches it, so its bursts keep their length
// whatever else is configured.
//
// With trim, a DCP data packet that burst or loss picks is trimmed
// instead and goes on with no further impairment from the rule: a
// trimming switch does not also corrupt, hold or copy the header-only
// packet it makes.
func (p *Port) impair(d Direction, now int64, addr uint64, n uint16) (fate, bool) {
	f := fate{len: n, addr: addr}
	ri := p.find(d, addr, n)
	if ri < 0 {
		return f, true
	}
	r, ps, ds := &p.plan.rules[ri], &p.state[ri], &p.st.Dir[d]
	ds.Matched++
	if r.rate > 0 && d == Egress && !police(r, ps, now, n) {
		p.destroy(d, addr, n, CausePoliced)
		return f, false
	}
	lost, cause := false, CauseLoss
	if r.ge && p.gilbert(r, ps) {
		lost, cause = true, CauseBurst
	} else {
		lost = p.chance(r.loss)
	}
	if lost {
		if r.trim && p.trim(&addr, &f) {
			ds.Trimmed++
			return f, true
		}
		p.destroy(d, addr, n, cause)
		return f, false
	}
	if p.chance(r.corrupt) {
		p.destroy(d, addr, n, CauseCorrupt)
		return f, false
	}
	if r.rate > 0 && d == Ingress && !police(r, ps, now, n) {
		p.destroy(d, addr, n, CausePoliced)
		return f, false
	}
	f.dup = p.chance(r.dup)
	if p.chance(r.reorder) {
		ds.Reordered++
		f.hold += r.reorderDelay
	}
	if r.holds {
		ds.Delayed++
		f.hold += r.delay + p.uniform(r.jitter)
	}
	return f, true
}

// find returns the index of the first rule of direction d whose filter
// the frame passes, or -1. It parses the frame only for a rule with a
// filter: "match: all" costs no parse.
func (p *Port) find(d Direction, addr uint64, n uint16) int {
	parsed := false
	for _, ri := range p.rules[d] {
		r := &p.plan.rules[ri]
		if !r.filtered() {
			return int(ri)
		}
		if !parsed {
			p.cfg.Classifier.Classify(p.cfg.Mem.Bytes(addr, int(n)), &p.meta)
			parsed = true
		}
		if r.matches(&p.meta, p.cfg.Classifier.DCP) {
			return int(ri)
		}
	}
	return -1
}

func (r *rule) filtered() bool { return r.roce || r.fabric || r.data || r.dscp >= 0 }

// matches reports whether the frame m describes passes r's filter; dcp
// is the classifier's DCP mode, without which DSCP bits are no DCP tag.
func (r *rule) matches(m *rocev2.Meta, dcp bool) bool {
	if r.data {
		if c := classOf(m, dcp); c != ClassData && c != ClassRetransmit {
			return false
		}
	}
	if r.roce {
		if m.Kind != rocev2.KindRoCE {
			return false
		}
		if r.ops != nil && r.ops[m.Opcode>>6]&(1<<(m.Opcode&63)) == 0 {
			return false
		}
	}
	if r.fabric && m.Kind != rocev2.KindRoCE && m.Kind != rocev2.KindMACControl && m.Kind != rocev2.KindLinkCtrl && m.ShimOff == 0 {
		return false
	}
	if r.dscp >= 0 {
		if m.Kind != rocev2.KindIP && m.Kind != rocev2.KindRoCE || int16(m.DSCP) != r.dscp {
			return false
		}
	}
	return true
}

// trim turns the frame, if it is a DCP data packet (tag 10), into a
// header-only packet in place (rocev2.Trim), which then takes the
// frame's place on the wire, as DCP's trimming switch does (seed 002
// §4.2, §6.1). It reports false, changing nothing, for any other frame,
// which the caller then destroys; *addr is the frame trimmed, a copy
// when another holder keeps the original.
func (p *Port) trim(addr *uint64, f *fate) bool {
	m, mem := &p.meta, p.cfg.Mem
	p.cfg.Classifier.Classify(mem.Bytes(*addr, int(f.len)), m)
	if m.Kind != rocev2.KindRoCE || m.Tag != rocev2.DCPData {
		return false
	}
	// A frame another holder keeps (llr's Tx buffer, dataplane.Mem.Hold)
	// is trimmed in a copy, so that what the holder sends again is the
	// frame as it was sent.
	if mem.Held(*addr) {
		a, ok := mem.Unshare(*addr, int(f.len), 0)
		if !ok {
			return false
		}
		*addr, f.addr = a, a
	}
	n, err := rocev2.Trim(mem.Room(*addr), m)
	if err != nil {
		return false // tagged, but not parsed as DCP: the classifier's DCP mode is off
	}
	f.len = uint16(n)
	return true
}

// gilbert steps rule r's Gilbert–Elliott chain and reports whether the
// frame is lost: the loss is drawn in the current state, then the state
// moves (as Linux netem's gemodel does).
func (p *Port) gilbert(r *rule, ps *ruleState) bool {
	if ps.bad {
		lost := p.chance(r.geLossB)
		if p.chance(r.geR) {
			ps.bad = false
		}
		return lost
	}
	lost := p.chance(r.geLoss)
	if p.chance(r.geP) {
		ps.bad = true
	}
	return lost
}

// police runs rule r's token bucket for a frame of n bytes at time now
// and reports whether the frame conforms.
func police(r *rule, ps *ruleState, now int64, n uint16) bool {
	if dt := now - ps.last; dt > 0 {
		// Beyond the time an empty bucket takes to fill, dt·rate
		// could overflow and the bucket is full anyway.
		if uint64(dt) >= r.fill {
			ps.tokens, ps.last = r.bucket, now
		} else if add := int64(uint64(dt) * r.rate / 8e9); add > 0 {
			ps.tokens = min(ps.tokens+add, r.bucket)
			// advance only by the time the added bytes stand for,
			// keeping the fraction of a byte for the next frame
			ps.last += int64(uint64(add) * 8e9 / r.rate)
		}
	} else if dt < 0 {
		ps.last = now
	}
	if ps.tokens < int64(n) {
		return false
	}
	ps.tokens -= int64(n)
	return true
}
