package stack

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/dcp"
	"rocetor/nic/fasr"
	"rocetor/nic/gbn"
	"rocetor/nic/irn"
)

// Transports are the loss recoveries a host can run, by name.
var Transports = []string{"gbn", "irn", "fasr", "dcp"}

// CCs are the congestion controls a host can run, by name.
var CCs = []string{"none", "fixed", "dcqcn", "timely", "hpcc"}

// DefaultBDP is the bandwidth-delay product, in packets, that the
// selective transports' SR state is sized for when Config.BDP is 0, one
// number for all (nic.SRState): IRN's BDP-FC window and bitmap span,
// FaSR's window and shared pool. 128 is gbn's window, and about a 1 Gb/s
// path with a 1 ms round trip, above the namespace testbed's. MaxBDP is
// IRN's and FaSR's largest window.
const (
	DefaultBDP = 128
	MaxBDP     = 1 << 16
)

// Errors a Config's names give; the messages name the choices.
var (
	ErrUnknownTransport = errors.New("unknown transport")
	ErrUnknownCC        = errors.New("unknown congestion control")
	// ErrPairing is a transport and a congestion control that do not
	// work together.
	ErrPairing = errors.New("transport and congestion control do not pair")
)

// Config is a host's transport and congestion control. Its zero value
// is Go-Back-N without congestion control, every parameter its default.
// A Config is a value: safe to copy and to use from any goroutine.
type Config struct {
	// Transport is the loss recovery: gbn, irn, fasr or dcp ("": gbn).
	Transport string
	// RTO is the first retransmission timeout (IRN's RTO_high); 0 is
	// the transport's default: 16 ms for gbn and fasr, 64 ms for dcp,
	// IRN's RTO_high 16 ms.
	RTO time.Duration
	// RTOLow is IRN's RTO_low, the timeout with at most N packets in
	// flight (0: irn's default, or RTO when that is shorter); other
	// transports have one timeout and ignore it.
	RTOLow time.Duration
	// BDP is the bandwidth-delay product in packets that IRN's window
	// and bitmaps and FaSR's window and shared pool are sized for (0:
	// DefaultBDP).
	BDP int
	// GBNWindow is Go-Back-N's window in packets (0: gbn's default,
	// 128). tor/fabric sets it to BDP; roceperf leaves it.
	GBNWindow int
	// IRNGoBackN and IRNNoBDPFC are IRN's two ablations (seed 004 §4.3,
	// irn.Config.GoBackN and NoBDPFC): go-back-N loss recovery in place
	// of SACKs, and BDP-FC off with the bitmaps tracking IRNNoBDPFC
	// packets. Other transports ignore them.
	IRNGoBackN bool
	IRNNoBDPFC int
	// IRNAckEvery is how many in-order packets IRN's receiver takes
	// before it acknowledges them unasked (irn.Config.AckEvery; 0:
	// irn's default, 16, never more than half the window). Other
	// transports ignore it.
	IRNAckEvery int
	// IRNNoTimeoutRecovery makes IRN's timer expiries resend nothing
	// (irn.Config.NoTimeoutRecovery: an experiment's diagnostic on a
	// lossless fabric). Other transports ignore it.
	IRNNoTimeoutRecovery bool
	// FaSRPoolBDP is the BDP in packets FaSR's shared SR pool is sized
	// for (fasr.Config.BDP: ceil(20·n/500) units, ceil(70·n/500)
	// blocks, seed 001 §III-D); 0 sizes it for BDP, the window. Other
	// transports ignore it.
	FaSRPoolBDP int
	// DCPRetransQ is DCP's RetransQ in entries per QP (dcp.Config.RetransQ;
	// 0: dcp's default, 256). The seed keeps it in host memory and gives
	// no size (seed 002 §4.3); other transports ignore it.
	DCPRetransQ int
	// DCPWindow is DCP's send window in packets in flight per QP,
	// retransmissions included (dcp.Config.Window; 0: none, dcp's
	// default). The seed's RNIC sends from the window its CC module
	// gives (awin, seed 002 §4.3); other transports ignore it.
	DCPWindow int
	// CC is the congestion control: none, fixed, dcqcn, timely or hpcc
	// ("": none).
	CC string
	// LineBps is the rate DCQCN and TIMELY start every QP at and never
	// pass, or the rate the fixed pacer holds each QP to; NewCC's
	// argument, when not 0, replaces it.
	LineBps uint64
	// DCQCN are DCQCN's parameters (nil: cc.DefaultDCQCNConfig,
	// ConnectX's defaults).
	DCQCN *cc.DCQCNConfig
	// Timely are TIMELY's parameters (nil: cc.DefaultTimelyConfig, the
	// paper's).
	Timely *cc.TimelyConfig
	// HPCC are HPCC's parameters (nil: cc.DefaultHPCCConfig, the
	// paper's and its ns-3 runs').
	HPCC *cc.HPCCConfig
}

// Validate checks the names and the ranges, and that the transport
// builds with these parameters. The congestion control's rate is
// checked by NewCC, which is given it.
func (c Config) Validate() error {
	switch {
	case c.RTO < 0 || c.RTOLow < 0:
		return fmt.Errorf("stack: RTO %v, RTO_low %v: want 0 (the transport's default) or more", c.RTO, c.RTOLow)
	case c.BDP < 0 || c.BDP > MaxBDP:
		return fmt.Errorf("stack: BDP %d: want 0 (%d) to %d packets", c.BDP, DefaultBDP, MaxBDP)
	case c.GBNWindow < 0:
		return fmt.Errorf("stack: GBN window %d: want 0 (gbn's default) or more", c.GBNWindow)
	case c.IRNNoBDPFC < 0 || c.IRNNoBDPFC > MaxBDP:
		return fmt.Errorf("stack: IRN without BDP-FC tracking %d packets: want 0 (BDP-FC on) to %d", c.IRNNoBDPFC, MaxBDP)
	case c.IRNAckEvery < 0 || c.IRNAckEvery > 0xffff:
		return fmt.Errorf("stack: IRN acknowledging every %d packets: want 0 (irn's default) to 65535", c.IRNAckEvery)
	case c.FaSRPoolBDP < 0 || c.FaSRPoolBDP > MaxBDP:
		return fmt.Errorf("stack: FaSR's pool sized for %d packets: want 0 (BDP) to %d", c.FaSRPoolBDP, MaxBDP)
	case c.DCPRetransQ < 0:
		return fmt.Errorf("stack: DCP RetransQ of %d entries: want 0 (dcp's default) or more", c.DCPRetransQ)
	case c.DCPWindow < 0:
		return fmt.Errorf("stack: DCP window of %d packets: want 0 (none) or more", c.DCPWindow)
	case !KnownCC(c.CC):
		return unknownCC(c.CC)
	}
	if c.DCQCN != nil && c.CC == "dcqcn" {
		if err := c.DCQCN.Validate(); err != nil {
			return fmt.Errorf("stack: dcqcn: %w", err)
		}
	}
	if err := Pairs(c.Transport, c.CC); err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	if c.Timely != nil && c.CC == "timely" {
		if err := c.Timely.Validate(); err != nil {
			return fmt.Errorf("stack: timely: %w", err)
		}
	}
	if c.HPCC != nil && c.CC == "hpcc" {
		if err := c.HPCC.Validate(); err != nil {
			return fmt.Errorf("stack: hpcc: %w", err)
		}
	}
	_, err := c.NewTransport()
	return err
}

// Pairs reports whether transport and congestion control, by name, work
// together: every pair does but dcp with timely (ErrPairing). DCP's
// responder acknowledges whole messages (eMSN, seed 002 §4.5), so the
// ACK of a segment's last packet waits for the rest of its message and
// the RTT TIMELY takes from it would count the wait.
func Pairs(transport, cc string) error {
	if transport == "dcp" && cc == "timely" {
		return fmt.Errorf("%w: timely needs an ACK per segment; dcp acknowledges whole messages (use dcqcn)", ErrPairing)
	}
	return nil
}

// KnownTransport reports whether name is a transport NewTransport
// builds ("" is gbn).
func KnownTransport(name string) bool { return name == "" || slices.Contains(Transports, name) }

// KnownCC reports whether name is a congestion control NewCC builds
// ("" is none).
func KnownCC(name string) bool { return name == "" || slices.Contains(CCs, name) }

// NewTransport returns a fresh transport for one endpoint. An unknown
// name is ErrUnknownTransport; a transport's own refusal of its
// parameters is returned as it gave it.
func (c Config) NewTransport() (nic.Transport, error) {
	rto := int64(c.RTO)
	bdp := cmp.Or(c.BDP, DefaultBDP)
	switch cmp.Or(c.Transport, "gbn") {
	case "gbn":
		return gbn.New(gbn.Config{RTO: rto, Window: c.GBNWindow})
	case "dcp":
		return dcp.New(dcp.Config{RTO: rto, RetransQ: c.DCPRetransQ, Window: c.DCPWindow})
	case "fasr":
		return fasr.New(fasr.Config{RTO: rto, Window: bdp, BDP: cmp.Or(c.FaSRPoolBDP, bdp)})
	case "irn":
		return c.newIRN(rto, int64(c.RTOLow), bdp)
	}
	return nil, fmt.Errorf("%w %q: want %s", ErrUnknownTransport, c.Transport, strings.Join(Transports, ", "))
}

// newIRN builds IRN with rto as its RTO_high, the timeout with a window
// in flight (what gbn's RTO compares with); RTO_low stays at its default
// unless that is longer or low sets it, and MaxRTO covers 16 doublings
// of rto. Its BDP-FC window and bitmaps span bdp packets of 1 KiB, or
// IRNNoBDPFC packets with BDP-FC off.
func (s Config) newIRN(rto, low int64, bdp int) (nic.Transport, error) {
	c := irn.Config{BDP: bdp << 10, GoBackN: s.IRNGoBackN, NoBDPFC: s.IRNNoBDPFC, AckEvery: s.IRNAckEvery,
		NoTimeoutRecovery: s.IRNNoTimeoutRecovery}
	def, _ := irn.New(irn.Config{})
	if rto > 0 {
		c.RTOHigh = rto
		c.RTOLow = min(rto, def.Config().RTOLow)
		c.MaxRTO = max(def.Config().MaxRTO, 16*rto)
	}
	if low > 0 {
		c.RTOLow = low // above RTO_high: irn.New refuses it
	}
	return irn.New(c)
}

// NewCC returns a fresh congestion control for one endpoint whose QPs
// start at lineBps (0: c.LineBps); nil for none. An unknown name is
// ErrUnknownCC; fixed, dcqcn, timely and hpcc need a rate. Validate, not
// NewCC, checks that the transport pairs with it.
func (c Config) NewCC(lineBps uint64) (nic.CC, error) {
	line := cmp.Or(lineBps, c.LineBps)
	switch cmp.Or(c.CC, "none") {
	case "none":
		return nil, nil
	case "fixed":
		if line == 0 {
			return nil, fmt.Errorf("cc fixed: no rate")
		}
		return cc.NewFixed(line, 0), nil
	case "dcqcn":
		d := cc.DefaultDCQCNConfig()
		if c.DCQCN != nil {
			d = *c.DCQCN
		}
		return cc.NewDCQCN(line, d)
	case "timely":
		d := cc.DefaultTimelyConfig()
		if c.Timely != nil {
			d = *c.Timely
		}
		return cc.NewTimely(line, d)
	case "hpcc":
		d := cc.DefaultHPCCConfig()
		if c.HPCC != nil {
			d = *c.HPCC
		}
		return cc.NewHPCC(line, d)
	}
	return nil, unknownCC(c.CC)
}

func unknownCC(name string) error {
	return fmt.Errorf("%w %q: want %s", ErrUnknownCC, name, strings.Join(CCs, ", "))
}
