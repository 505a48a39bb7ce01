package dataplane

import "sync"

// Published is how a stage shows its plain counters to other goroutines,
// as the worker does with its own: the worker's thread stores a copy at
// most once a millisecond of worker time (Maybe), and anyone loads the
// last copy (Load). The packet path never takes the lock. The zero value
// is ready; T must be a plain value (no slices or maps shared with the
// live counters).
type Published[T any] struct {
	mu   sync.Mutex
	v    T
	last int64 // worker time of the last store; the worker's thread only
}

// Maybe stores *v if a millisecond has passed since the last store.
func (p *Published[T]) Maybe(now int64, v *T) {
	if now-p.last >= 1e6 {
		p.Store(now, v)
	}
}

// Store stores *v now.
func (p *Published[T]) Store(now int64, v *T) {
	p.last = now
	p.mu.Lock()
	p.v = *v
	p.mu.Unlock()
}

// Load returns the last stored copy. It is safe from any goroutine.
func (p *Published[T]) Load() T {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v
}
