package pipeline

import (
	"slices"
	"sort"

	"rocetor/dataplane"
)

// ECNConfig is the switch's ECN marking, DCQCN's congestion point (Zhu
// et al., SIGCOMM 2015; dataplane.ECNProfile): named profiles shaped
// like SONiC's WRED_PROFILE, and the egress queues, on every port, that
// use them. No section, no marking; "ecn: {}" marks on the data queue
// with the profile derived from each port's rate:
//
//	ecn:
//	  mark: dequeue          # or enqueue
//	  seed: 1
//	  profiles:
//	    roce:
//	      ecn: ecn_all       # SONiC's ecn mode
//	      min_threshold: 40KB
//	      max_threshold: 160KB
//	      probability: 20    # percent
//	  queues:
//	    data: roce
type ECNConfig struct {
	// Mark is where a queue decides its marks: dequeue, on the bytes a
	// frame leaves behind (as ns-3's RDMA model, which the seeds'
	// simulations use: the mark skips the queueing delay), or enqueue,
	// on the bytes it finds (as switch ASICs' WRED).
	Mark string `yaml:"mark"`
	// Seed seeds the marking draws; each port of each worker derives its
	// own stream from it, so a seed and a frame sequence give the same
	// marks on every run. A reload restarts the streams from it.
	Seed uint64 `yaml:"seed"`
	// Profiles are the marking profiles by name. A profile named
	// "default" replaces the built-in one.
	Profiles map[string]ECNProfileConfig `yaml:"profiles"`
	// Queues names the profile of each marking queue (control,
	// retransmit, data, idle, and the qos section's queues: ECN
	// profiles per traffic class), the same on every port; empty means
	// {data: default}. The built-in "default" profile is derived from
	// the port's rate.
	Queues map[string]string `yaml:"queues"`
}

// ECNProfileConfig is one marking profile, in SONiC's WRED_PROFILE
// terms (DCQCN's Kmin, Kmax, Pmax).
type ECNProfileConfig struct {
	// ECN is SONiC's ecn mode. rocetor colours no frame, so every frame
	// is green: ecn_all, ecn_green, ecn_green_yellow and ecn_green_red
	// mark; ecn_none, ecn_yellow, ecn_red and ecn_yellow_red mark
	// nothing. Default ecn_all.
	ECN string `yaml:"ecn"`
	// MinThreshold is Kmin, the queue depth up to which nothing is
	// marked (SONiC's green_min_threshold); 0 takes the rate-derived
	// default's.
	MinThreshold dataplane.Bytes `yaml:"min_threshold"`
	// MaxThreshold is Kmax, the depth beyond which every ECN-capable
	// frame is marked (green_max_threshold); 0 takes the rate-derived
	// default's.
	MaxThreshold dataplane.Bytes `yaml:"max_threshold"`
	// Probability is Pmax in percent: the marking probability at
	// max_threshold, rising linearly from 0 at min_threshold
	// (green_drop_probability).
	Probability *float64 `yaml:"probability"`
}

// DefaultECNProfile is the name of the built-in profile.
const DefaultECNProfile = "default"

// ecnModes are SONiC's ecn modes and whether each marks in a switch
// that colours every frame green.
var ecnModes = map[string]bool{
	"": true, "ecn_all": true, "ecn_green": true, "ecn_green_yellow": true, "ecn_green_red": true,
	"ecn_none": false, "ecn_yellow": false, "ecn_red": false, "ecn_yellow_red": false,
}

// On reports whether the section is there.
func (e *ECNConfig) On() bool { return e != nil }

// queues returns the queue → profile map in force.
func (e *ECNConfig) queues() map[string]string {
	if len(e.Queues) == 0 {
		return map[string]string{"data": DefaultECNProfile}
	}
	return e.Queues
}

// validate checks the section against the rest of the configuration.
func (e *ECNConfig) validate(c *Config) error {
	if e == nil {
		return nil
	}
	if e.Mark != "" {
		if _, err := dataplane.ParseMarkPoint(e.Mark); err != nil {
			return bad("ecn.mark", "%q, want dequeue or enqueue", e.Mark)
		}
	}
	for _, name := range sortedKeys(e.Profiles) {
		p := e.Profiles[name]
		f := "ecn.profiles." + name
		if _, ok := ecnModes[p.ECN]; !ok {
			return bad(f+".ecn", "%q, want one of SONiC's ecn modes: ecn_all, ecn_green, ecn_green_yellow, ecn_green_red, ecn_none, ecn_yellow, ecn_red, ecn_yellow_red", p.ECN)
		}
		if p.Probability != nil && !(*p.Probability >= 0 && *p.Probability <= 100) {
			return bad(f+".probability", "%v, want a percentage from 0 to 100", *p.Probability)
		}
		if p.MinThreshold != 0 && p.MaxThreshold != 0 && p.MinThreshold > p.MaxThreshold {
			return bad(f+".min_threshold", "%d bytes is above max_threshold (%d)", p.MinThreshold, p.MaxThreshold)
		}
		if int(p.MinThreshold) >= int(c.Egress.QueueLimit) {
			return bad(f+".min_threshold", "%d bytes, want below egress.queue_limit (%d): the queue would drop frames before marking any",
				p.MinThreshold, c.Egress.QueueLimit)
		}
	}
	eg := c.Layout()
	for _, q := range sortedKeys(e.Queues) {
		name := e.Queues[q]
		if eg.QueueIndexByName(q) < 0 {
			return bad("ecn.queues", "%q is not a queue %v", q, c.queueNames())
		}
		if _, ok := e.Profiles[name]; !ok && name != DefaultECNProfile {
			return bad("ecn.queues", "queue %s: no profile %q in ecn.profiles", q, name)
		}
	}
	// A derived or half-given profile must hold together at every
	// port's rate.
	for i := range c.Ports {
		for q, name := range e.queues() {
			if p := e.profile(c, i, name); p.Validate() != nil {
				return bad("ecn.profiles."+name, "on port %s (queue %s): %v", c.Ports[i], q, p.Validate())
			}
		}
	}
	return nil
}

// portRate is the configured rate of port i for the whole switch (not
// per worker); 0 when unshaped.
func (c *Config) portRate(i int) uint64 {
	if r, ok := c.Egress.PortRates[c.Ports[i]]; ok {
		return uint64(r)
	}
	return uint64(c.Egress.Rate)
}

// profile resolves profile name on port i, for the whole switch: the
// rate-derived default fills in what the profile leaves zero.
func (e *ECNConfig) profile(c *Config, i int, name string) dataplane.ECNProfile {
	d := dataplane.DefaultECNProfile(c.portRate(i))
	p, ok := e.Profiles[name]
	if !ok {
		return d // the built-in default
	}
	if !ecnModes[p.ECN] {
		return dataplane.ECNProfile{}
	}
	if p.MinThreshold != 0 {
		d.MinBytes = int(p.MinThreshold)
	}
	if p.MaxThreshold != 0 {
		d.MaxBytes = int(p.MaxThreshold)
	}
	if p.Probability != nil {
		d.PMax = *p.Probability / 100
	}
	return d
}

// marking is the ECN marking of one worker's egress, whose queues have
// the layout eg. Each of W workers shapes its share of a port to rate/W
// (Plan.Build), so its queues drain W times slower than the port's;
// a depth of K/W bytes in a worker's queue stands for the delay of K
// bytes in the port's, and the thresholds are divided by W as the rate
// is. With a handoff (Config.Handoff) the port's owner alone queues on
// it, at the whole rate, and W is 1, but for the ports the workers
// share (Config.SharedPorts).
func (e *ECNConfig) Marking(c *Config, egs []dataplane.EgressConfig) dataplane.Marking {
	var m dataplane.Marking
	if e == nil {
		m.Profiles = make([][]dataplane.ECNProfile, len(egs))
		return m
	}
	m.At, _ = dataplane.ParseMarkPoint(e.Mark)
	if e.Mark == "" {
		m.At = dataplane.MarkDequeue
	}
	m.Seed = e.Seed
	shares := c.shares()
	for i, eg := range egs {
		w := shares[i]
		ps := make([]dataplane.ECNProfile, len(eg.Queues))
		for q, name := range e.queues() {
			k := eg.QueueIndexByName(q)
			if k < 0 {
				continue
			}
			p := e.profile(c, i, name)
			if p.On() {
				p.MinBytes /= w
				p.MaxBytes = max(p.MaxBytes/w, 1)
			}
			ps[k] = p
		}
		m.Profiles = append(m.Profiles, ps)
	}
	return m
}

// applyMarking writes m into the egress configurations.
func ApplyMarking(egs []dataplane.EgressConfig, m dataplane.Marking) {
	for i := range egs {
		egs[i].MarkAt = m.At
		egs[i].Queues = slices.Clone(egs[i].Queues)
		for q := range egs[i].Queues {
			egs[i].Queues[q].ECN = dataplane.ECNProfile{}
			if q < len(m.Profiles[i]) {
				egs[i].Queues[q].ECN = m.Profiles[i][q]
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
