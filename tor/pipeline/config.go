package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/dataplane"
	"rocetor/tor/impair"
	"rocetor/tor/trim"
)

// Config is tord's configuration: a YAML file, overridden by flags. Every
// field has a default; docs/operations.md lists them with their units.
type Config struct {
	// File is the configuration file tord read, if any (--config).
	File string `yaml:"-"`

	Ports       []string `yaml:"ports"`        // interfaces the switch owns
	Workers     int      `yaml:"workers"`      // poll-mode workers; each owns queue w of every port
	Poll        string   `yaml:"poll"`         // busy (never sleeps; yields the CPU on idle loops), adaptive, interrupt or spin (busy without the yield)
	MetricsAddr string   `yaml:"metrics_addr"` // Prometheus /metrics, /healthz, /readyz
	AdminAddr   string   `yaml:"admin_addr"`   // admin API and pprof; loopback unless admin_token_file is set
	// AdminTokenFile holds the bearer token every admin request must
	// carry; required for an admin_addr that is not loopback.
	AdminTokenFile string `yaml:"admin_token_file"`
	LogLevel       string `yaml:"log_level"` // debug, info, warn, error

	// CPU schedules the workers' threads: a policy, its real-time
	// priority or nice value, and the CPUs they are pinned to, as VPP's
	// cpu section does; empty, the kernel's defaults.
	CPU CPUConfig `yaml:"cpu"`

	XDP struct {
		Mode      string `yaml:"mode"`       // auto, native or generic attach
		Bind      string `yaml:"bind"`       // auto, zerocopy or copy
		FrameSize int    `yaml:"frame_size"` // bytes per UMEM frame: 2048 or 4096
		Frames    int    `yaml:"frames"`     // UMEM frames per worker, power of two
		RingSize  int    `yaml:"ring_size"`  // descriptors per ring, power of two
		// BusyPoll turns on the kernel's preferred busy polling on
		// every socket: a worker runs its queues' NAPI poll itself, in
		// a recvfrom per port and loop, for up to this long each; 0:
		// off (softirq or NAPI threads receive). Only with poll: busy.
		BusyPoll       time.Duration `yaml:"busy_poll"`
		BusyPollBudget int           `yaml:"busy_poll_budget"` // frames per busy poll; 0: the kernel's 8
	} `yaml:"xdp"`

	Egress struct {
		Rate       dataplane.Rate  `yaml:"rate"`        // shaped link rate, e.g. 10G; 0 = unshaped
		QueueLimit dataplane.Bytes `yaml:"queue_limit"` // byte budget of each queue, e.g. 1MiB
		// PortRates overrides rate for the ports it names, e.g. an
		// uplink slower than the others.
		PortRates map[string]dataplane.Rate `yaml:"port_rates"`
		// OwnedPorts keeps one owner worker for the egress of the
		// ports it names where the workers would otherwise each send
		// on their own share of it (a shared port: an unshaped port
		// without llr or trimming, with netrt or llr and several
		// workers; pipeline.Config.SharedPorts): for a port with fewer
		// transmit queues than workers, such as the testbed's host
		// links, which have one (tor/lab).
		OwnedPorts []string `yaml:"owned_ports"`
		// Ring is the entries each queue's ring of frames starts with
		// (a power of two; 0 = 256); it grows to what queue_limit
		// needs as the queue deepens (dataplane.EgressConfig.Ring).
		Ring int `yaml:"ring"`
		// ByInput gives every port one data queue per input port,
		// served round robin at the data queue's level ("data" for
		// port 0, then "data@1", "data@2", …): the scheduling of an
		// input-queued switch's virtual output queues (the IRN seed's
		// simulator, seed 004 §4.1), each queue with the data queue's
		// budget. For the forwarding-only switch: not with a qos,
		// netrt, trim, llr, ecn, int or buffer section, which name the
		// data queue alone.
		ByInput bool `yaml:"by_input"`
		// InputLimit is the bytes the frames one port brought in may
		// hold in the egress queues at once, whatever queue they wait
		// in; past it a frame is dropped (input_full), as an
		// input-queued switch's input buffer refuses it (with
		// by_input, the IRN seed's switches). Each worker keeps its
		// own count. 0: none.
		InputLimit dataplane.Bytes `yaml:"input_limit"`
	} `yaml:"egress"`

	Forwarding struct {
		Multipath    string          `yaml:"multipath"`     // ecmp, spray or adaptive
		AdaptiveBias dataplane.Bytes `yaml:"adaptive_bias"` // bytes in favour of the ECMP choice
		Queue        string          `yaml:"queue"`         // egress queue for forwarded traffic
		DSCPQueues   map[int]string  `yaml:"dscp_queues"`   // per-DSCP overrides
		// HashSeed perturbs the ECMP hash; give each switch tier its
		// own, or the tiers split flows alike (ECMP polarization).
		HashSeed uint64 `yaml:"hash_seed"`
		// OwnerECMP, with several workers handing frames to their
		// owners (netrt, trim, llr or int), has an ecmp group pick
		// among its members on the flow owner's ports, where it has
		// some: the flow then leaves by an uplink of the worker that
		// owns it, without a handoff (docs/architecture.md, "Many
		// workers"). Off, a flow's path is the hash's alone, the same
		// with any number of workers.
		OwnerECMP bool `yaml:"owner_ecmp"`
	} `yaml:"forwarding"`

	VerifyICRC bool `yaml:"verify_icrc"` // drop RoCEv2 frames with a bad ICRC (costs a CRC per frame)

	// Impair injects loss, corruption, reordering and delay for testbeds
	// on the wire of the ports it names (tor/impair); no rules, no
	// impaired ports.
	Impair impair.Config `yaml:"impair"`

	// NetRT recovers losses between this ToR and the remote ToRs
	// (tor/netrt); no fabric ports, no stages.
	NetRT NetRTConfig `yaml:"netrt"`

	// Trim is DCP's trimming switch (tor/trim, seed 002 §4.2): on the
	// trimming ports, DCP data packets that find the data queue over
	// the threshold become header-only packets on the control queue,
	// which shares the data queue's level by WRR. No section, no stage;
	// "trim: {}" trims on every port with the defaults:
	//
	//	trim:
	//	  threshold: 64KiB   # data queue depth beyond which packets are trimmed (or dropped if not DCP data)
	//	  incast_degree: 8   # N: an N−1 to 1 incast keeps the control queue lossless
	//	  ratio: 0           # r = data/HO packet size; 0 = 1106/66 (1024-byte MTU, IPv4)
	//	  min_weight: 0.1    # WRR weight w when r ≤ N−1; else w = (N−1)/(r−N+1)
	//	  control_limit: 0   # bytes the control queue may hold; 0 = egress.queue_limit (and the shared buffer's threshold)
	//	  ports: [s2]        # trimming ports; empty = all
	Trim *trim.Config `yaml:"trim"`

	// DCP says the fabric runs DCP (seed 002): the classifier reads the
	// DCP tag in the DSCP and the DCP extension header. A switch that
	// only forwards DCP traffic needs it too: a header-only packet of a
	// WRITE First has no RETH, and without DCP parsing it is malformed.
	// Trimming, and impair rules that trim, turn it on by themselves.
	// With it, header-only packets take the control queue of every port,
	// trimming or not (tor/fwd, seed 002 §4.2), and their drops are
	// counted apart (rocetor_dcp_ho_drops_total). Off, DSCPs whose low
	// bits are set are ordinary traffic classes.
	DCP bool `yaml:"dcp"`

	// LLR is link-local retransmission (tor/llr, Protego) on the links
	// it names, to switches or llr-capable NICs; see
	// tor/pipeline/llr.go.
	LLR LLRConfig `yaml:"llr"`

	// ECN is DCQCN's congestion point: ECN marking per egress queue with
	// WRED_PROFILE-shaped profiles (tor/pipeline/ecn.go). No section, no
	// marking; "ecn: {}" marks the data queue of every port with the
	// profile derived from the port's rate (4 KB and 16 KB of Kmin and
	// Kmax per Gbit/s, Pmax 20%). A reload applies it live.
	ECN *ECNConfig `yaml:"ecn"`
	// Trust says which ports face hosts and which ports' PFC frames
	// are honoured: where each kind of control frame may come from
	// (tor/trust, docs/operations.md "Trust boundaries").
	Trust TrustConfig `yaml:"trust"`
	// PFC pauses a port's peer when the bytes it put in the egress
	// queues pass xoff and resumes it at xon (dataplane.IngressPFC): a
	// lossless fabric, as a switch MMU makes one. No section, PFC only
	// where a stage sends it (llr, NetRT).
	PFC *PFCConfig `yaml:"pfc"`
	// INT stamps in-band telemetry into the RoCEv2 frames that carry
	// an INT request tail, at the egress ports it names, for HPCC
	// (tor/inband, tor/pipeline/int.go). No section, no stage.
	INT *INTConfig `yaml:"int"`
	// Buffer is a switch-wide shared buffer with dynamic per-queue
	// thresholds (dataplane.SharedBuffer; tor/pipeline/buffer.go). No
	// section: each queue has egress.queue_limit and nothing else.
	Buffer *BufferConfig `yaml:"buffer"`
	// QoS gives the switch traffic classes, in SONiC's terms: DSCP →
	// traffic class → queue, per-queue scheduling and byte budgets,
	// lossless classes (tor/pipeline/qos.go). No section, one class:
	// every frame on the data queue, as forwarding says; "qos: {}" is
	// the default profile (RoCE lossless, CNPs strict, the rest lossy).
	QoS *QoSConfig `yaml:"qos"`
}

// PFCConfig is PFC on buffer thresholds, per ingress port and priority
// (the data queue's priority 3 in DefaultEgress):
//
//	pfc:
//	  xoff: 64KiB   # pause the peer when its queued bytes pass this
//	  xon: 32KiB    # resume it when they fall to this
//	  quanta: 0     # a pause's length in 512 bit times; 0 = 65535, repeated while above xon
//	  ports: [s1]   # ports whose peers are paused; empty = all
//	  priorities: [3]      # the PFC enable vector; empty = every priority
//	  cable_length: 100    # metres: derive the headroom (tor/pipeline/pfc.go), or
//	  headroom: 32KiB      # give it; xoff + headroom must fit egress.queue_limit
//	  watchdog: {detection: 200ms, restoration: 200ms, action: drop}
//
// With a headroom and no xoff, xoff is egress.queue_limit less the
// headroom and xon half of it. With workers: W each worker counts its
// own queues' share; with a handoff (netrt, trim or llr on several
// workers) it is refused.
type PFCConfig struct {
	XOff   dataplane.Bytes `yaml:"xoff"`   // a port's peer is paused when the bytes it queued here pass this
	XOn    dataplane.Bytes `yaml:"xon"`    // ... and resumed when they fall to this
	Quanta uint16          `yaml:"quanta"` // a pause's length in 512 bit times, sent again while above xon; 0: 65535
	Ports  []string        `yaml:"ports"`  // ports whose peers are paused; empty: all
	// Alpha, with a buffer section, raises xoff and xon by alpha times
	// the shared pool's free bytes (the ns-3 RDMA MMU's dynamic PFC
	// threshold): xoff is then a port's static share and xoff − xon the
	// resume offset. 0: static thresholds.
	Alpha float64 `yaml:"alpha"`
	// Priorities is the PFC enable vector: the lossless priorities,
	// the only ones counted, paused and honoured when the peer pauses.
	// Empty: every priority (the data queue's 3 in DefaultEgress).
	Priorities []int `yaml:"priorities"`
	// PriorityGroups gives a lossless priority thresholds of its own,
	// as SONiC's BUFFER_PG profiles do per priority group:
	// {3: {xoff: 200KiB, xon: 100KiB}}. A priority without an entry
	// takes xoff and xon.
	PriorityGroups map[int]PGThresholds `yaml:"priority_groups"`
	// Headroom is the bytes above xoff a paused peer's frames in
	// flight may take, given; cable_length, mtu and response_time
	// derive it instead. With either, xoff + headroom must fit
	// egress.queue_limit, xoff defaults to queue_limit − headroom (xon
	// to half of it), and a buffer section keeps a headroom per
	// lossless port and priority out of its shared pool.
	Headroom     dataplane.Bytes `yaml:"headroom"`
	CableLength  float64         `yaml:"cable_length"`  // the cable to each peer in metres: derives the headroom from each port's rate (docs/operations.md, PFC headroom); 0: no derived headroom
	MTU          dataplane.Bytes `yaml:"mtu"`           // the largest frame on the link, for the derived headroom; 0: 9216
	ResponseTime time.Duration   `yaml:"response_time"` // the peer's reaction to a pause with both interfaces' delays, for the derived headroom; 0: the IEEE 802.3 Annex 31B bound for the rate
	// Watchdog ends pause storms and deadlocks: a lossless priority
	// paused by the peer with frames waiting and none sent for
	// detection is stormed (docs/operations.md, PFC watchdog). No
	// section, no watchdog.
	Watchdog *PFCWatchdogConfig `yaml:"watchdog"`
}

// ingress returns the worker's configuration for ports, nil without
// a section.
func (p *PFCConfig) ingress(cfg *Config) *dataplane.IngressPFC {
	if p == nil {
		return nil
	}
	xoff, xon := p.thresholds(cfg)
	c := &dataplane.IngressPFC{XOff: xoff, XOn: xon, Quanta: p.Quanta, Alpha: p.Alpha, Priorities: p.lossless()}
	for q, g := range p.PriorityGroups {
		c.Groups[q] = dataplane.Thresholds{XOff: int(g.XOff), XOn: int(g.XOn)}
	}
	if cfg.Buffer != nil {
		// The pool kept the headroom aside (HeadroomReserve); each
		// worker's share of a port queues its share of it.
		// PFC is refused with a handoff (validate); without one
		// every port has a share on each worker.
		c.Headroom = p.headroom(cfg)
		if !cfg.Handoff() {
			c.Headroom /= max(cfg.Workers, 1)
		}
	}
	if len(p.Ports) > 0 {
		c.Ports = make([]bool, len(cfg.Ports))
		for i, n := range cfg.Ports {
			c.Ports[i] = slices.Contains(p.Ports, n)
		}
	}
	return c
}

// validate checks the section against the rest of the configuration.
func (p *PFCConfig) validate(c *Config) error {
	if p == nil {
		return nil
	}
	if err := p.validateLossless(c); err != nil {
		return err
	}
	if err := p.validateGroups(c); err != nil {
		return err
	}
	xoff, xon := p.thresholds(c)
	switch {
	case xoff <= 0 || xon < 0 || xon >= xoff:
		return bad("pfc", "xoff %d, xon %d bytes: want 0 ≤ xon < xoff (without xoff: a headroom below egress.queue_limit)", xoff, xon)
	case xoff >= int(c.Egress.QueueLimit):
		return bad("pfc.xoff", "%d bytes, want below egress.queue_limit (%d): the queue would drop before it paused", xoff, c.Egress.QueueLimit)
	case p.Alpha != 0 && c.Buffer == nil:
		return bad("pfc.alpha", "%v needs a buffer section: the thresholds follow its shared pool", p.Alpha)
	case p.Alpha != 0 && !(p.Alpha >= 1.0/256 && p.Alpha <= 256):
		return bad("pfc.alpha", "%v, want 1/256 to 256", p.Alpha)
	case c.Handoff():
		// With a handoff a port's queues have one owner, which would
		// count every ingress port's bytes but could not send the
		// pause on a port another worker owns.
		return bad("pfc", "with workers: %d and netrt, trim or llr, ports have one owner each; PFC on buffer thresholds needs workers: 1 there", c.Workers)
	}
	for _, n := range p.Ports {
		if !slices.Contains(c.Ports, n) {
			return bad("pfc.ports", "%q is not one of ports", n)
		}
	}
	return nil
}

// dcp reports whether the classifier must parse DCP headers.
func (c *Config) ParsesDCP() bool { return c.DCP || c.Trim != nil || hasImpairTrim(*c) }

// hasImpairTrim reports whether an impair rule trims.
func hasImpairTrim(c Config) bool {
	for _, r := range c.Impair.Rules {
		if r.Trim {
			return true
		}
	}
	return false
}

// DefaultConfig returns the configuration tord runs with when neither
// file nor flags say otherwise.
func DefaultConfig() Config {
	var c Config
	c.Workers = 1
	c.Poll = "adaptive"
	c.MetricsAddr = "127.0.0.1:9478"
	c.AdminAddr = "127.0.0.1:9479"
	c.LogLevel = "info"
	c.XDP.Mode = "auto"
	c.XDP.Bind = "auto"
	c.XDP.FrameSize = 4096
	c.XDP.Frames = 8192
	c.XDP.RingSize = 2048
	c.Egress.QueueLimit = 1 << 20
	c.Forwarding.Multipath = "ecmp"
	c.Forwarding.Queue = "data"
	return c
}

// LoadConfig reads a YAML file over the defaults. Unknown fields are errors,
// so a typo does not silently fall back to a default.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return DefaultConfig(), fmt.Errorf("read config: %w", err)
	}
	return ParseConfig(b, path)
}

// ParseConfig reads YAML b over the defaults, as LoadConfig reads a file
// (name is for errors). The simulator builds every switch with it from
// the text a tord would read.
func ParseConfig(b []byte, name string) (Config, error) {
	c := DefaultConfig()
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	// An empty file (io.EOF) means all defaults.
	if err := d.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("config %s: %w", name, err)
	}
	return c, nil
}

// ErrConfig wraps every validation error; the message names the field.
var ErrConfig = errors.New("invalid config")

func bad(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
}

// Validate checks every field and names the first bad one.
func (c *Config) Validate() error {
	if len(c.Ports) < 2 {
		return bad("ports", "need at least two interfaces, got %d", len(c.Ports))
	}
	seen := map[string]bool{}
	for _, p := range c.Ports {
		if p == "" || seen[p] {
			return bad("ports", "empty or repeated interface %q", p)
		}
		seen[p] = true
	}
	if c.Workers < 1 || c.Workers > 64 {
		return bad("workers", "%d, want 1 to 64", c.Workers)
	}
	if _, err := dataplane.ParsePollMode(c.Poll); err != nil {
		return bad("poll", "%v", err)
	}
	if err := c.CPU.validate(c); err != nil {
		return err
	}
	for _, a := range []struct{ field, addr string }{{"metrics_addr", c.MetricsAddr}, {"admin_addr", c.AdminAddr}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return bad(a.field, "%q is not host:port", a.addr)
		}
	}
	if host, _, _ := net.SplitHostPort(c.AdminAddr); c.AdminAddr != "" && !isLoopback(host) && c.AdminTokenFile == "" {
		return bad("admin_addr", "%q is not a loopback address: the admin API changes the switch, so it needs admin_token_file (--admin-token-file) to listen there", c.AdminAddr)
	}
	if c.AdminTokenFile != "" {
		if _, err := ReadToken(c.AdminTokenFile); err != nil {
			return bad("admin_token_file", "%v", err)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log_level", "%q, want debug, info, warn or error", c.LogLevel)
	}
	switch c.XDP.Mode {
	case "auto", "native", "generic":
	default:
		return bad("xdp.mode", "%q, want auto, native or generic", c.XDP.Mode)
	}
	switch c.XDP.Bind {
	case "auto", "zerocopy", "copy":
	default:
		return bad("xdp.bind", "%q, want auto, zerocopy or copy", c.XDP.Bind)
	}
	if c.XDP.FrameSize != 2048 && c.XDP.FrameSize != 4096 {
		return bad("xdp.frame_size", "%d, want 2048 or 4096", c.XDP.FrameSize)
	}
	if r := c.Egress.Ring; r < 0 || r&(r-1) != 0 {
		return bad("egress.ring", "%d, want a power of two (0: 256)", r)
	}
	if c.XDP.BusyPoll < 0 || c.XDP.BusyPoll > time.Second || c.XDP.BusyPollBudget < 0 || c.XDP.BusyPollBudget > 65535 {
		return bad("xdp.busy_poll", "%v with budget %d, want 0 to 1s and 0 to 65535 frames", c.XDP.BusyPoll, c.XDP.BusyPollBudget)
	}
	if c.XDP.BusyPoll > 0 && c.Poll != "busy" {
		return bad("xdp.busy_poll", "needs poll: busy (a worker that sleeps in poll would leave the receive path to no one), have %s", c.Poll)
	}
	if !pow2(c.XDP.RingSize) || c.XDP.RingSize < 64 {
		return bad("xdp.ring_size", "%d, want a power of two ≥ 64", c.XDP.RingSize)
	}
	if !pow2(c.XDP.Frames) || c.XDP.Frames < 2*c.XDP.RingSize*len(c.Ports) {
		return bad("xdp.frames", "%d, want a power of two ≥ 2 × ring_size × ports (%d)", c.XDP.Frames, 2*c.XDP.RingSize*len(c.Ports))
	}
	for name := range c.Egress.PortRates {
		if !slices.Contains(c.Ports, name) {
			return bad("egress.port_rates", "%q is not one of ports", name)
		}
	}
	for _, name := range c.Egress.OwnedPorts {
		if !slices.Contains(c.Ports, name) {
			return bad("egress.owned_ports", "%q is not one of ports", name)
		}
	}
	if c.Egress.QueueLimit < 2048 {
		return bad("egress.queue_limit", "%d bytes, want ≥ 2KiB", c.Egress.QueueLimit)
	}
	switch c.Forwarding.Multipath {
	case "ecmp", "spray", "adaptive":
	default:
		return bad("forwarding.multipath", "%q, want ecmp, spray or adaptive", c.Forwarding.Multipath)
	}
	if err := c.QoS.validate(c); err != nil {
		return err
	}
	if err := c.validateByInput(); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, q := range c.Layout().Queues {
		known[q.Name] = true
	}
	if !known[c.Forwarding.Queue] {
		return bad("forwarding.queue", "%q is not a queue %v", c.Forwarding.Queue, c.queueNames())
	}
	if err := c.Impair.Validate(c.Ports); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.NetRT.validate(c.Ports); err != nil {
		return err
	}
	// NetRT and trimming keep their flow state and budgets per worker,
	// while the XDP program steers frames by rx queue: with more than one
	// worker, frames are handed to the worker that owns their flow or
	// port (Owners, dataplane.Handoff), so any number of workers will do.
	if err := c.LLR.validate(c); err != nil {
		return err
	}
	if err := c.ECN.validate(c); err != nil {
		return err
	}
	if err := c.INT.validate(c); err != nil {
		return err
	}
	if err := c.Trust.validate(c); err != nil {
		return err
	}
	if err := c.PFC.validate(c); err != nil {
		return err
	}
	if err := c.Buffer.validate(c); err != nil {
		return err
	}
	if t := c.Trim; t != nil {
		if err := t.Validate(c.Ports); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if c.Forwarding.Queue != trim.DataQueue {
			return bad("trim", "trims what fwd puts on the %q queue, but forwarding.queue is %q", trim.DataQueue, c.Forwarding.Queue)
		}
		if len(c.Ports) > trim.MaxPorts {
			return bad("trim", "trims at most %d ports, have %d", trim.MaxPorts, len(c.Ports))
		}
		th, what := int(t.Threshold), ""
		if th == 0 {
			th, what = trim.DefaultThreshold, " (the default)"
		}
		if th >= int(c.Egress.QueueLimit) {
			return bad("trim.threshold", "%d bytes%s, want below egress.queue_limit (%d): the data queue would drop packets before trimming them",
				th, what, c.Egress.QueueLimit)
		}
	}
	if need := 2*c.XDP.RingSize*len(c.Ports) + c.NetRT.Frames(); c.NetRT.On() && c.XDP.Frames < need {
		// Frames NetRT holds are not in the fill rings: without room
		// for them the ports run out of receive buffers.
		return bad("xdp.frames", "%d, NetRT holds up to %d frames beyond the rings' %d: want a power of two ≥ %d",
			c.XDP.Frames, c.NetRT.Frames(), 2*c.XDP.RingSize*len(c.Ports), need)
	}
	for d, q := range c.Forwarding.DSCPQueues {
		if d < 0 || d > 63 {
			return bad("forwarding.dscp_queues", "DSCP %d out of range 0–63", d)
		}
		if !known[q] {
			return bad("forwarding.dscp_queues", "DSCP %d: %q is not a queue", d, q)
		}
	}
	return nil
}

// ReadToken reads a bearer token file: its first line, at least 16
// characters.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tok, _, _ := bytes.Cut(b, []byte("\n"))
	tok = bytes.TrimSpace(tok)
	if len(tok) < 16 {
		return nil, fmt.Errorf("%s: the token must be at least 16 characters", path)
	}
	return tok, nil
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
