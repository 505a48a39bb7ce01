package llr

// Protector is what the corruption monitor, tord's admin API and the
// Prometheus collector read and set of a switch's llr, link by link: one
// Stage, or Links over the stages of a switch's workers. Its methods are
// safe from any goroutine.
type Protector interface {
	Protected(i int) bool
	Active(i int) bool
	Pinned(i int) bool
	SetActive(i int, on bool) bool
	Release(i int) bool
	RequestProtection(i int, loss float64) bool
	NeighbourLoss(i int) float64
	// Snapshot returns the counters as last published, each protected
	// port's by the stage that protects it.
	Snapshot() Stats
	// Config returns the configuration in force; its Ports are every
	// protected port.
	Config() Config
}

// Links is the Protector of a switch whose workers each protect some of
// its links (pipeline.Owners deals them round the workers; one stage
// alone runs a link's sender and receiver, seed 003 §3): each call on
// port i goes to the stage that protects i. Read-only after NewLinks and
// safe for concurrent use, as the Stage methods it calls are.
type Links struct {
	stages []*Stage
	by     [MaxPorts]*Stage // the stage protecting each port, nil where none does
}

// NewLinks returns the links the stages protect, one stage per worker;
// a port two stages claim belongs to the first.
func NewLinks(stages ...*Stage) *Links {
	l := &Links{stages: stages}
	for _, s := range stages {
		for i := range MaxPorts {
			if l.by[i] == nil && s.Protected(i) {
				l.by[i] = s
			}
		}
	}
	return l
}

// Stage returns the stage that protects port i, or nil.
func (l *Links) Stage(i int) *Stage {
	if i < 0 || i >= MaxPorts {
		return nil
	}
	return l.by[i]
}

// Protected reports whether a stage protects port i.
func (l *Links) Protected(i int) bool { return l.Stage(i) != nil }

// Active is Stage.Active on port i's stage; false when none protects it.
func (l *Links) Active(i int) bool { s := l.Stage(i); return s != nil && s.Active(i) }

// Pinned is Stage.Pinned on port i's stage.
func (l *Links) Pinned(i int) bool { s := l.Stage(i); return s != nil && s.Pinned(i) }

// SetActive is Stage.SetActive on port i's stage.
func (l *Links) SetActive(i int, on bool) bool {
	s := l.Stage(i)
	return s != nil && s.SetActive(i, on)
}

// Release is Stage.Release on port i's stage.
func (l *Links) Release(i int) bool { s := l.Stage(i); return s != nil && s.Release(i) }

// RequestProtection is Stage.RequestProtection on port i's stage.
func (l *Links) RequestProtection(i int, loss float64) bool {
	s := l.Stage(i)
	return s != nil && s.RequestProtection(i, loss)
}

// NeighbourLoss is Stage.NeighbourLoss on port i's stage.
func (l *Links) NeighbourLoss(i int) float64 {
	if s := l.Stage(i); s != nil {
		return s.NeighbourLoss(i)
	}
	return 0
}

// Snapshot returns each protected port's counters from the snapshot of
// the stage that protects it.
func (l *Links) Snapshot() Stats {
	var out Stats
	for _, s := range l.stages {
		mine := false
		for i := range MaxPorts {
			mine = mine || l.by[i] == s
		}
		if !mine {
			continue
		}
		st := s.Snapshot()
		for i := range MaxPorts {
			if l.by[i] == s {
				out.Ports[i] = st.Ports[i]
			}
		}
	}
	return out
}

// Config returns the first stage's configuration with Ports set to
// every protected port; the stages differ in nothing else.
func (l *Links) Config() Config {
	var c Config
	if len(l.stages) > 0 {
		c = l.stages[0].Config()
	}
	c.Ports = 0
	for i := range MaxPorts {
		if l.by[i] != nil {
			c.Ports |= 1 << i
		}
	}
	return c
}
