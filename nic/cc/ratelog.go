package cc

import "math"

// rateLog is what RateSummary needs of a QP's rate over time; DCQCN,
// Timely and HPCC keep one in each QP's state and add to it as they
// bring the state up to a time.
type rateLog struct {
	now  int64   // the time the state was brought up to; -1 from Open to the first call
	open int64   // when Open was called
	min  float64 // lowest rate
	area float64 // ∫ rate dt since open, bit/s × ns
}

// summarize sums up the QPs of st whose Open was called (opened),
// reading each one's log and current rate with get.
func summarize[S any](st []S, get func(*S) (opened bool, l *rateLog, rate float64)) RateSummary {
	var s RateSummary
	s.Min = math.Inf(1)
	for i := range st {
		opened, l, rate := get(&st[i])
		if !opened {
			continue
		}
		s.QPs++
		s.Min = min(s.Min, l.min)
		if span := l.now - l.open; span > 0 {
			s.Mean += l.area / float64(span)
		} else {
			s.Mean += rate
		}
		s.Final += rate
	}
	if s.QPs == 0 {
		return RateSummary{}
	}
	s.Mean /= float64(s.QPs)
	s.Final /= float64(s.QPs)
	return s
}
