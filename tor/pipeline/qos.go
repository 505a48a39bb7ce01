package pipeline

import (
	"maps"
	"slices"
	"strconv"

	"rocetor/dataplane"
)

// QoSConfig gives the switch traffic classes, in SONiC's terms: a
// frame's DSCP picks its traffic class (DSCP_TO_TC_MAP), the class its
// egress queue (TC_TO_QUEUE_MAP), and each queue has a scheduler
// (SCHEDULER: strict or DWRR with a weight), a byte budget and, in the
// ecn section, an ECN marking profile (WRED_PROFILE). The classes named
// in pfc_enable are lossless: their queue's PFC priority is the class,
// so that pause frames for that priority stop it, and only the bytes
// of lossless queues count towards ingress PFC (dataplane.IngressPFC).
//
// No section: one class, today's layout — every frame on the "data"
// queue (forwarding.queue, forwarding.dscp_queues). "qos: {}" is the
// default profile, NVIDIA's RoCE layout (RoCE on priority 3, CNPs on
// priority 6) with everything else lossy:
//
//	qos:
//	  dscp_to_tc_map: {24: 3, 25: 3, 26: 3, 27: 3, 48: 6}   # other DSCPs: TC 0
//	  tc_to_queue_map: {0: lossy, 3: data, 6: cnp}
//	  pfc_enable: [3]
//	  scheduler:
//	    strict: {type: strict}
//	    roce: {type: dwrr, weight: 50}
//	    lossy: {type: dwrr, weight: 50}
//	  queue:
//	    cnp: {scheduler: strict, limit: 64KiB}
//	    data: {scheduler: roce}            # limit: egress.queue_limit
//	    lossy: {scheduler: lossy}
//
// A field left out takes the default profile's. The switch's own
// queues keep their places (control, retransmit, idle: the stages'),
// and "data", the queue the stages trim, protect and retransmit for, is
// the RoCE class's; the section's other queues follow them. Strict
// queues are served before every other queue, the higher traffic class
// first; DWRR queues share one level below the switch's control and
// retransmit queues, by bytes, weight × 1500 bytes a round each.
type QoSConfig struct {
	// DSCPToTC is SONiC's DSCP_TO_TC_MAP: DSCP (0–63) → traffic class
	// (0–7). DSCPs not listed are class 0.
	DSCPToTC map[int]int `yaml:"dscp_to_tc_map"`
	// TCToQueue is SONiC's TC_TO_QUEUE_MAP with queues by name: class
	// 0 and every class a DSCP maps to need one.
	TCToQueue map[int]string `yaml:"tc_to_queue_map"`
	// PFCEnable is PORT_QOS_MAP's pfc_enable: the lossless classes.
	PFCEnable []int `yaml:"pfc_enable"`
	// Scheduler is SONiC's SCHEDULER table, by name.
	Scheduler map[string]SchedulerConfig `yaml:"scheduler"`
	// Queue is SONiC's QUEUE table: each queue a class maps to, with
	// its scheduler and byte budget.
	Queue map[string]QoSQueueConfig `yaml:"queue"`
}

// SchedulerConfig is one SONiC SCHEDULER entry.
type SchedulerConfig struct {
	// Type is strict or dwrr (SONiC's STRICT and DWRR; wrr is taken for
	// dwrr: the switch shares bytes, not frames).
	Type string `yaml:"type"`
	// Weight is a DWRR queue's share, 1–100 as SONiC's; a round gives
	// the queue weight × 1500 bytes of credit.
	Weight int `yaml:"weight"`
}

// QoSQueueConfig is one queue of the qos section.
type QoSQueueConfig struct {
	Scheduler string          `yaml:"scheduler"` // a name in qos.scheduler
	Limit     dataplane.Bytes `yaml:"limit"`     // byte budget; 0: egress.queue_limit
}

// Queue levels (dataplane.QueueConfig.Level) with a qos section. The
// switch's control (3) and retransmit (2) queues and idle (0) keep
// theirs; strict queues go above them all, class by class: a CNP is a
// few dozen bytes, rate-limited per QP by the NIC, and must not wait
// behind anything (DCQCN's reaction is only as quick as its CNPs).
const (
	levelDWRR   = 1
	levelStrict = 10 // + the queue's traffic class
)

// DefaultQoS returns the default profile ("qos: {}").
func DefaultQoS() QoSConfig {
	return QoSConfig{
		// DCP (seed 002 §4.2) tags its frames in the DSCP's two low
		// bits: 24–27 are CS3 and its tagged forms, RoCE all.
		DSCPToTC:  map[int]int{24: 3, 25: 3, 26: 3, 27: 3, 48: 6},
		TCToQueue: map[int]string{0: "lossy", 3: "data", 6: "cnp"},
		PFCEnable: []int{3},
		Scheduler: map[string]SchedulerConfig{
			"strict": {Type: "strict"},
			"roce":   {Type: "dwrr", Weight: 50},
			"lossy":  {Type: "dwrr", Weight: 50},
		},
		Queue: map[string]QoSQueueConfig{
			"cnp":   {Scheduler: "strict", Limit: 64 << 10},
			"data":  {Scheduler: "roce"},
			"lossy": {Scheduler: "lossy"},
		},
	}
}

// resolved returns the section with the default profile's fields where
// it leaves them out.
func (q *QoSConfig) resolved() QoSConfig {
	d := DefaultQoS()
	r := *q
	if r.DSCPToTC == nil {
		r.DSCPToTC = d.DSCPToTC
	}
	if r.TCToQueue == nil {
		r.TCToQueue = d.TCToQueue
	}
	if r.PFCEnable == nil {
		r.PFCEnable = d.PFCEnable
	}
	if r.Scheduler == nil {
		r.Scheduler = d.Scheduler
	}
	if r.Queue == nil {
		r.Queue = d.Queue
	}
	return r
}

// ownQueues are the switch's own queues, which a class may not take.
var ownQueues = []string{"control", "retransmit", "idle"}

// validate checks the section against the rest of the configuration.
func (q *QoSConfig) validate(c *Config) error {
	if q == nil {
		return nil
	}
	r := q.resolved()
	if len(c.Forwarding.DSCPQueues) > 0 || c.Forwarding.Queue != "data" {
		return bad("qos", "with a qos section, dscp_to_tc_map and tc_to_queue_map place the traffic: leave forwarding.queue and forwarding.dscp_queues out")
	}
	for _, d := range slices.Sorted(maps.Keys(r.DSCPToTC)) {
		if tc := r.DSCPToTC[d]; d < 0 || d > 63 || tc < 0 || tc > 7 {
			return bad("qos.dscp_to_tc_map", "DSCP %d → TC %d: want DSCP 0–63, TC 0–7", d, tc)
		}
		if _, ok := r.TCToQueue[r.DSCPToTC[d]]; !ok {
			return bad("qos.tc_to_queue_map", "TC %d (DSCP %d) has no queue", r.DSCPToTC[d], d)
		}
	}
	if _, ok := r.TCToQueue[0]; !ok {
		return bad("qos.tc_to_queue_map", "TC 0, the class of every DSCP dscp_to_tc_map leaves out, has no queue")
	}
	if err := r.validateQueues(c); err != nil {
		return err
	}
	for _, tc := range r.PFCEnable {
		if _, ok := r.TCToQueue[tc]; !ok || tc < 0 || tc > 7 {
			return bad("qos.pfc_enable", "TC %d: want a class of tc_to_queue_map", tc)
		}
	}
	for _, n := range r.queueNames() {
		if ps := r.lossless(n); len(ps) > 1 {
			return bad("qos.pfc_enable", "queue %s carries the lossless classes %v: a queue has one PFC priority", n, ps)
		}
	}
	if n := len(dataplane.DefaultEgress(0, 1).Queues) + len(r.added()); n > 16 {
		return bad("qos.queue", "%d queues a port, want at most 16", n)
	}
	return nil
}

// validateQueues checks TC_TO_QUEUE_MAP, QUEUE and SCHEDULER.
func (r *QoSConfig) validateQueues(c *Config) error {
	for _, tc := range slices.Sorted(maps.Keys(r.TCToQueue)) {
		n := r.TCToQueue[tc]
		if tc < 0 || tc > 7 {
			return bad("qos.tc_to_queue_map", "TC %d, want 0–7", tc)
		}
		if slices.Contains(ownQueues, n) {
			return bad("qos.tc_to_queue_map", "TC %d: %q is the switch's own queue; name another", tc, n)
		}
		if _, ok := r.Queue[n]; !ok {
			return bad("qos.tc_to_queue_map", "TC %d: queue %q is not in qos.queue", tc, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.Queue)) {
		qc := r.Queue[n]
		if !slices.Contains(slices.Collect(maps.Values(r.TCToQueue)), n) {
			return bad("qos.queue."+n, "no traffic class maps to it (tc_to_queue_map)")
		}
		s, ok := r.Scheduler[qc.Scheduler]
		if !ok {
			return bad("qos.queue."+n+".scheduler", "%q is not in qos.scheduler", qc.Scheduler)
		}
		if qc.Limit != 0 && qc.Limit < 2048 {
			return bad("qos.queue."+n+".limit", "%d bytes, want ≥ 2KiB", qc.Limit)
		}
		switch s.Type {
		case "strict":
		case "dwrr", "wrr":
			if s.Weight < 1 || s.Weight > 100 {
				return bad("qos.scheduler."+qc.Scheduler+".weight", "%d, want 1–100", s.Weight)
			}
		default:
			return bad("qos.scheduler."+qc.Scheduler+".type", "%q, want strict or dwrr", s.Type)
		}
	}
	return nil
}

// queueNames returns the section's queues, sorted.
func (r *QoSConfig) queueNames() []string { return slices.Sorted(maps.Keys(r.Queue)) }

// added returns the queues the section adds to the switch's own four,
// in the order they follow them.
func (r *QoSConfig) added() []string {
	return slices.DeleteFunc(r.queueNames(), func(n string) bool { return n == "data" })
}

// classes returns the traffic classes that map to queue n, ascending.
func (r *QoSConfig) classes(n string) []int {
	var tcs []int
	for tc, q := range r.TCToQueue {
		if q == n {
			tcs = append(tcs, tc)
		}
	}
	slices.Sort(tcs)
	return tcs
}

// lossless returns the lossless classes of queue n.
func (r *QoSConfig) lossless(n string) []int {
	return slices.DeleteFunc(r.classes(n), func(tc int) bool { return !slices.Contains(r.PFCEnable, tc) })
}

// layout returns eg with the section's queues: "data" reconfigured,
// the others appended, each with its level, weight, PFC priority and
// limit (0: eg's data queue's).
func (r *QoSConfig) layout(eg dataplane.EgressConfig) dataplane.EgressConfig {
	eg.Queues = slices.Clone(eg.Queues)
	di := eg.QueueIndexByName("data")
	limit := eg.Queues[di].Limit
	for _, n := range append([]string{"data"}, r.added()...) {
		qc, ok := r.Queue[n]
		if !ok {
			continue // no class maps to data: it keeps its place
		}
		q := dataplane.QueueConfig{Name: n, Weight: 1, Limit: limit, PFC: -1}
		if qc.Limit != 0 {
			q.Limit = int(qc.Limit)
		}
		if s := r.Scheduler[qc.Scheduler]; s.Type == "strict" {
			q.Level = levelStrict + slices.Max(append(r.classes(n), 0))
		} else {
			q.Level, q.Weight = levelDWRR, s.Weight
		}
		if ps := r.lossless(n); len(ps) == 1 {
			q.PFC = ps[0]
		}
		if n == "data" {
			eg.Queues[di] = q
		} else {
			eg.Queues = append(eg.Queues, q)
		}
	}
	return eg
}

// Layout returns the queues of every port of the switch, in order, at
// rate 0 and a byte budget of egress.queue_limit: DefaultEgress's,
// with the qos section's classes.
func (c *Config) Layout() dataplane.EgressConfig {
	eg := dataplane.DefaultEgress(0, int(c.Egress.QueueLimit))
	if c.Egress.ByInput {
		return byInput(eg, len(c.Ports))
	}
	if c.QoS == nil {
		return eg
	}
	r := c.QoS.resolved()
	return r.layout(eg)
}

// byInput returns eg with n data queues in the place of one, "data"
// and "data@1" to "data@n-1" (egress.by_input).
func byInput(eg dataplane.EgressConfig, n int) dataplane.EgressConfig {
	di := eg.QueueIndexByName("data")
	qs := slices.Clone(eg.Queues[:di+1])
	for i := 1; i < n; i++ {
		q := eg.Queues[di]
		q.Name = "data@" + strconv.Itoa(i)
		qs = append(qs, q)
	}
	eg.Queues = append(qs, eg.Queues[di+1:]...)
	return eg
}

// validateByInput checks egress.by_input against the sections that
// name the data queue alone.
func (c *Config) validateByInput() error {
	if !c.Egress.ByInput {
		return nil
	}
	for _, s := range []struct {
		name string
		on   bool
	}{{"qos", c.QoS != nil}, {"netrt", c.NetRT.On()}, {"trim", c.Trim != nil}, {"llr", c.LLR.On()}, {"ecn", c.ECN != nil},
		{"int", c.INT != nil}, {"buffer", c.Buffer != nil}, {"forwarding.dscp_queues", len(c.Forwarding.DSCPQueues) > 0}} {
		if s.on {
			return bad("egress.by_input", "not with a %s section: it names the data queue alone", s.name)
		}
	}
	if c.Forwarding.Queue != "data" {
		return bad("egress.by_input", "forwarding.queue %q: the queues by input are the data queue's", c.Forwarding.Queue)
	}
	if n := len(dataplane.DefaultEgress(0, 1).Queues) - 1 + len(c.Ports); n > 16 {
		return bad("egress.by_input", "%d ports make %d queues a port, want at most 16", len(c.Ports), n)
	}
	return nil
}

// queueNames returns the names of the layout's queues, for errors.
func (c *Config) queueNames() []string {
	var ns []string
	for _, q := range c.Layout().Queues {
		ns = append(ns, q.Name)
	}
	return ns
}

// dscpQueues returns the egress queue of every DSCP by the qos
// section's maps: DSCP → class → queue.
func (c *Config) dscpQueues() map[uint8]int {
	r := c.QoS.resolved()
	eg := c.Layout()
	m := make(map[uint8]int, 64)
	for d := range 64 {
		m[uint8(d)] = eg.QueueIndexByName(r.TCToQueue[r.DSCPToTC[d]])
	}
	return m
}

// QueueClass is a queue's place in the qos section, for torctl and
// /metrics.
type QueueClass struct {
	Queue     string
	Classes   []int  // traffic classes that map to it
	DSCPs     []int  // DSCPs that map to those classes
	Scheduler string // "strict" or "dwrr"
	Weight    int    // DWRR weight; 0 for strict
	PFC       int    // PFC priority; -1: lossy
}

// QueueClasses returns the class of each queue of the layout that a
// traffic class maps to, in layout order; nil without a qos section.
func (c *Config) QueueClasses() []QueueClass {
	if c.QoS == nil {
		return nil
	}
	r := c.QoS.resolved()
	var out []QueueClass
	for _, q := range c.Layout().Queues {
		qc, ok := r.Queue[q.Name]
		if !ok {
			continue
		}
		s := r.Scheduler[qc.Scheduler]
		v := QueueClass{Queue: q.Name, Classes: r.classes(q.Name), Scheduler: "dwrr", Weight: s.Weight, PFC: q.PFC}
		if s.Type == "strict" {
			v.Scheduler, v.Weight = "strict", 0
		}
		for d := range 64 {
			if slices.Contains(v.Classes, r.DSCPToTC[d]) {
				v.DSCPs = append(v.DSCPs, d)
			}
		}
		out = append(out, v)
	}
	return out
}

// keepDWRRShares restores, in after (trim.WRR's egress made from
// before), the byte shares the qos section gave the DWRR queues that
// share the data queue's level. WRR replaces the data queue's weight by
// trimming's, on a 1-byte quantum, and scales the others by the old
// quantum: a lossy queue of weight 50 beside RoCE's 50 would get 75,000
// against the data queue's 1,000 or so. Here each such queue gets the
// data queue's new weight times its old ratio to data's, so RoCE and
// the lossy class share as configured, and trimming's control:data
// ratio holds as tor/trim sets it. Without a qos section the data
// queue is alone on its level and nothing changes.
func keepDWRRShares(before, after dataplane.EgressConfig) {
	di := before.QueueIndexByName("data")
	d := before.Queues[di]
	for i, q := range before.Queues {
		if i == di || q.Level != d.Level || q.Name == "control" {
			continue
		}
		after.Queues[i].Weight = max(1, int(float64(after.Queues[di].Weight)*float64(q.Weight)/float64(d.Weight)+0.5))
	}
}
