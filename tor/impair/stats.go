package impair

// RuleStats are the counters of one rule. Drops are also counted by the
// worker under the Reason* values; these say which rule made them.
type RuleStats struct {
	Port      string
	Direction Direction

	Matched   uint64 // frames the rule's port, direction and filter matched
	Lost      uint64 // Bernoulli losses (impair_loss)
	BurstLost uint64 // Gilbert–Elliott losses (impair_burst)
	Corrupted uint64 // FCS errors (impair_corrupt)
	Policed   uint64 // over the rate (impair_policed)
	Overflow  uint64 // frames, originals or copies, not held for want of budget (impair_overflow)
	// Trimmed counts DCP data packets that loss or burst picked and a
	// trim rule turned into header-only packets instead of dropping
	// them; they are not in Lost or BurstLost.
	Trimmed uint64

	Duplicated uint64 // copies sent
	DupFailed  uint64 // copies not made for want of a free frame (no_frame)
	Reordered  uint64 // frames held back by reorder
	Delayed    uint64 // frames held by delay
	// Unrouted counts frames the rule would have held or copied but
	// that had no egress port yet (impair placed before fwd); they
	// pass unimpaired.
	Unrouted uint64

	Held      int // frames held now under this rule
	HeldBytes int // their bytes
}

// Stats are the counters of one Stage.
type Stats struct {
	// Rules are the counters of the rule set in force, index for index
	// with Config.Rules. They start again at zero when a new rule set is
	// adopted.
	Rules []RuleStats
	// Held and HeldBytes count every frame held now, including those
	// held under a rule set since replaced; HeldBytes never exceeds
	// hold_bytes.
	Held, HeldBytes int
	MaxHeldBytes    int    // high-water mark of HeldBytes
	Released        uint64 // held frames sent on
	Flushed         uint64 // held frames freed by Close
	TimerFull       uint64 // timers the worker refused (releases then wait for the next batch)
	Sets            uint64 // rule sets adopted
}

// Stats returns the live counters, sharing Rules with the stage. Call it
// only from the worker's goroutine (or after the worker stopped); other
// goroutines use Snapshot.
func (s *Stage) Stats() Stats { return s.st }

// publish copies the counters for Snapshot, about once a millisecond of
// worker time, as the worker does with its own.
func (s *Stage) publish(now int64) {
	s.lastPub = now
	s.pubMu.Lock()
	rules := append(s.pub.Rules[:0], s.st.Rules...)
	s.pub = s.st
	s.pub.Rules = rules
	s.pubMu.Unlock()
}

// Snapshot returns a copy of the counters as last published. It is safe
// to call from any goroutine.
func (s *Stage) Snapshot() Stats {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	st := s.pub
	st.Rules = append([]RuleStats(nil), s.pub.Rules...)
	return st
}
