package perf

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is a client run's result; its JSON names are what testbed
// automation parses, so they stay as they are.
type Report struct {
	Transport   string  `json:"transport"`
	Op          string  `json:"op"`
	Size        int     `json:"size"`
	Count       int     `json:"count"`
	QPs         int     `json:"qps"`
	Messages    int     `json:"messages"`
	Bytes       int64   `json:"bytes"`
	DurationS   float64 `json:"duration_s"`
	GoodputGbps float64 `json:"goodput_gbps"`
	// Start and End are duration_s's ends on the wall clock, so that
	// the runs of several clients into one server (serve --clients) can
	// be lined up: a testbed's goodput of a round is the bytes of all
	// over the span from the first Start to the last End.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	FCT   FCT       `json:"fct_us"`
	Counters
	VerifiedBytes int64     `json:"verified_bytes"`
	Corrupt       int       `json:"corrupt"`
	Depth         int       `json:"depth"`
	MTU           int       `json:"mtu"`
	Server        *Counters `json:"server,omitempty"`
	// perftest's figures: the latency test's summary (lat_us, with
	// perftest's column names), the bandwidth test's peak (perftest's
	// BW peak) and message rate, the run's length when -D set it
	// rather than --count, and the client's CPU use with --cpu-util.
	Lat         *LatStats  `json:"lat_us,omitempty"`
	BWPeakGbps  float64    `json:"bw_peak_gbps,omitempty"`
	MsgRateMpps float64    `json:"msg_rate_mpps,omitempty"`
	DurationSet float64    `json:"duration_set_s,omitempty"`
	CPUUtilPct  *float64   `json:"cpu_util_pct,omitempty"`
	Pcap        *PcapStats `json:"pcap,omitempty"`
	// Reverse is the way back of a -b run: what the server sent, and
	// what was verified of it (by the client for WRITE and SEND, by the
	// server for READ).
	Reverse *Direction `json:"reverse,omitempty"`
	Error   string     `json:"error,omitempty"`

	firstCorrupt string
	gbits        bool // --report-gbits
}

// FCT is the flow completion time distribution in microseconds.
type FCT struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"` // meaningful from 10,000 messages on
	Mean  float64 `json:"mean"`
	Max   float64 `json:"max"`
}

// setRun fills the figures of the completed messages: lats are their
// completion times (ns), first the first post and last the last
// completion on the session clock.
func (r *Report) setRun(lats []int64, first, last int64, size int) {
	r.Messages = len(lats)
	r.Bytes = int64(len(lats)) * int64(size)
	if len(lats) == 0 || last <= first {
		return
	}
	r.DurationS = float64(last-first) / 1e9
	r.GoodputGbps = float64(r.Bytes) * 8 / r.DurationS / 1e9
	r.MsgRateMpps = round6(float64(r.Messages) / r.DurationS / 1e6)
	r.FCT = FCTOf(lats)
}

// setWall sets Start and End from first and last on the session clock,
// whose time now is now (wall: the wall clock's at the same moment).
func (r *Report) setWall(first, last, now int64, wall time.Time) {
	if r.DurationS == 0 {
		return
	}
	r.Start, r.End = wall.Add(time.Duration(first-now)).UTC(), wall.Add(time.Duration(last-now)).UTC()
}

// FCTOf summarises latencies in nanoseconds as microseconds.
func FCTOf(lats []int64) FCT {
	s := slices.Clone(lats)
	slices.Sort(s)
	var total float64
	for _, v := range s {
		total += float64(v)
	}
	us := func(v int64) float64 { return round3(float64(v) / 1e3) }
	return FCT{P50: us(Percentile(s, 0.50)), P99: us(Percentile(s, 0.99)), P999: us(Percentile(s, 0.999)),
		P9999: us(Percentile(s, 0.9999)), Mean: round3(total / float64(len(s)) / 1e3), Max: us(s[len(s)-1])}
}

// Percentile returns the nearest-rank q-quantile of sorted (ascending):
// the smallest value with at least q of the values at or below it, the
// zero value for none. It is the one definition of a percentile that
// roceperf, the lab and the simulator's results (tor/fabric) use.
func Percentile[T cmp.Ordered](sorted []T, q float64) T {
	n := len(sorted)
	if n == 0 {
		var zero T
		return zero
	}
	k := int(math.Ceil(q*float64(n))) - 1
	return sorted[min(max(k, 0), n-1)]
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// writeJSON prints r as one JSON object.
func (r *Report) writeJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeTable prints r for a person: perftest's table, then what
// roceperf adds.
func (r *Report) writeTable(w io.Writer) error {
	writeHeader(w, r)
	writeRow(w, r)
	fmt.Fprintln(w, perftestRule)
	return r.writeDetails(w)
}

// writeDetails prints what roceperf measures beyond perftest's table.
func (r *Report) writeDetails(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  messages\t%d of %d (%d bytes)\n", r.Messages, r.Count, r.Bytes)
	fmt.Fprintf(tw, "  duration\t%.6f s\n", r.DurationS)
	fmt.Fprintf(tw, "  goodput\t%.3f Gbit/s\n", r.GoodputGbps)
	fmt.Fprintf(tw, "  FCT (µs)\tp50 %.1f  p99 %.1f  p99.9 %.1f  mean %.1f  max %.1f\n",
		r.FCT.P50, r.FCT.P99, r.FCT.P999, r.FCT.Mean, r.FCT.Max)
	fmt.Fprintf(tw, "  packets\tsent %d  received %d\n", r.PacketsSent, r.PacketsReceived)
	fmt.Fprintf(tw, "  recovery\tretransmitted %d  timeouts %d  NAKs received %d  sent %d\n",
		r.RetxPackets, r.Timeouts, r.NAKsReceived, r.NAKsSent)
	writeCC(tw, "", &r.Counters)
	if d := r.DCP; d != nil {
		fmt.Fprintf(tw, "  DCP sender\tHO returned %d (stale %d, duplicate %d)  HO retransmits %d  RetransQ overflows %d  fallback timeouts %d (%d packets)\n",
			d.HOReturned, d.HOStale, d.HODuplicates, d.HORetransmits, d.RetransQOverflows, d.FallbackTimeouts, d.FallbackRetransmits)
	}
	if d := r.IRN; d != nil {
		fmt.Fprintf(tw, "  IRN sender	NACKs %d (SACKs %d)  recoveries %d  retransmits %d  timeouts low %d high %d  READ re-issues %d  window %d (max in flight %d, full %d times)\n",
			d.NACKsReceived, d.SACKs, d.Recoveries, d.Retransmits, d.TimeoutsLow, d.TimeoutsHigh, d.ReadReissues,
			d.Window, d.MaxInFlight, d.WindowFull)
	}
	if d := r.FaSR; d != nil {
		fmt.Fprintf(tw, "  FaSR sender\tSACKs %d (gaps lost %d, SACK loss %d)  SACK retransmits %d  FNACKs %d (acted on %d)  timeouts by lost-cnt 0/1/>1 %d/%d/%d  Go-Back-N %d\n",
			d.SACKs, d.LostGaps, d.SACKLossGaps, d.SACKRetransmits, d.FNACKsReceived, d.FNACKRestarts,
			d.Timeouts0, d.Timeouts1, d.TimeoutsN, d.TxGBNFallbacks+d.GBNRewinds)
	}
	if s := r.Server; s != nil {
		fmt.Fprintf(tw, "  server\tsent %d  received %d  retransmitted %d  timeouts %d  NAKs sent %d\n",
			s.PacketsSent, s.PacketsReceived, s.RetxPackets, s.Timeouts, s.NAKsSent)
		writeCC(tw, "server ", s)
		if d := s.DCP; d != nil {
			fmt.Fprintf(tw, "  DCP receiver\tHO bounced %d (not returned %d)  unanchored %d  duplicates %d  recounts %d  poisoned %d  deferred %d\n",
				d.HOBounced, d.HONotReturned, d.Unanchored, d.Duplicates, d.Recounts, d.Poisoned, d.Deferred)
		}
		if d := s.IRN; d != nil {
			fmt.Fprintf(tw, "  IRN receiver	out of order %d  NACKs sent %d  duplicates %d  early READs %d\n",
				d.OutOfOrder, d.NACKsSent, d.Duplicates, d.EarlyReads)
		}
		if d := s.FaSR; d != nil {
			fmt.Fprintf(tw, "  FaSR receiver\trecoveries %d (fast %d, slow %d; fast-path ratio %.2f)  FNACKs %d  lost-cnt overflows %d  Go-Back-N %d  pool peak %d/%d units %d/%d blocks\n",
				d.Recoveries, d.FastEntries, d.SlowEntries, d.FastPathRatio, d.FNACKsSent, d.LostOverflows, d.GBNFallbacks,
				d.PeakUnits, d.Units, d.PeakBlocks, d.Blocks)
		}
	}
	if r.QPContextBytes > 0 {
		fmt.Fprintf(tw, "  memory per QP\t%d B context, %d B queues", r.QPContextBytes, r.QPQueueBytes)
		if r.DCP != nil {
			fmt.Fprintf(tw, " (DCP tracking %d B)", r.DCP.TrackingBytes)
		}
		if r.IRN != nil {
			fmt.Fprintf(tw, " (IRN bitmaps %d B)", r.IRN.BitmapBytes)
		}
		if r.FaSR != nil {
			fmt.Fprintf(tw, " (FaSR %d B; shared pool %d B)", r.FaSR.StateBytes, r.FaSR.SharedBytes)
		}
		fmt.Fprintln(tw)
	}
	if r.SRStateBytes > 0 {
		fmt.Fprintf(tw, "  SR state\t%s", srText(&r.Counters, r.QPs))
		if r.Server != nil && r.Server.SRStateBytes > 0 {
			fmt.Fprintf(tw, "; server %s", srText(r.Server, r.QPs))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "  verified\t%d bytes, %d corrupt\n", r.VerifiedBytes, r.Corrupt)
	if v := r.Reverse; v != nil {
		fmt.Fprintf(tw, "  way back\t%d messages (%d bytes) in %.6f s: %.3f Gbit/s (peak %.3f); verified %d bytes, %d corrupt\n",
			v.Messages, v.Bytes, v.DurationS, v.GoodputGbps, v.BWPeakGbps, v.VerifiedBytes, v.Corrupt)
	}
	if r.CPUUtilPct != nil {
		fmt.Fprintf(tw, "  CPU\t%.1f %% of one CPU (the client process: its poll loop and the endpoint's worker)\n", *r.CPUUtilPct)
	}
	if d := dropsText(r.Drops); d != "" {
		fmt.Fprintf(tw, "  drops\t%s\n", d)
	}
	if d := dropsText(r.HODrops); d != "" {
		fmt.Fprintf(tw, "  HO drops\t%s\n", d)
	}
	if r.Error != "" {
		fmt.Fprintf(tw, "  error\t%s\n", r.Error)
	}
	return tw.Flush()
}

// srText is an endpoint's SR state: per QP × QPs + shared, and the BDP
// it is sized for.
func srText(c *Counters, qps int) string {
	s := fmt.Sprintf("%d B (%d B per QP × %d QPs + %d B shared", c.SRStateBytes, c.SRStateBytesPerQP, qps, c.SRSharedBytes)
	if c.SRBDPPackets > 0 {
		s += fmt.Sprintf(", for a BDP of %d packets", c.SRBDPPackets)
	}
	return s + ")"
}

func dropsText(d map[string]uint64) string {
	var parts []string
	for k, v := range d {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// writeCC writes the congestion lines of c: the signals when there were
// any or a congestion control ran, and DCQCN's figures.
func writeCC(tw io.Writer, who string, c *Counters) {
	if c.CC == nil && c.CEReceived+c.CNPsSent+c.CNPsReceived == 0 {
		return
	}
	fmt.Fprintf(tw, "  %scongestion\tCE received %d  CNPs sent %d  received %d\n", who, c.CEReceived, c.CNPsSent, c.CNPsReceived)
	if d := c.CC; d != nil && d.Rate != nil {
		fmt.Fprintf(tw, "  %s%s\trate cuts %d  CNPs held %d  increases: fast recovery %d, additive %d, hyper %d  rate over %d QPs (Gbit/s): min %.3f  mean %.3f  final %.3f\n",
			who, d.Name, d.RateCuts, d.CNPsHeld, d.FastRecovery, d.AdditiveInc, d.HyperInc, d.Rate.QPs,
			d.Rate.Min/1e9, d.Rate.Mean/1e9, d.Rate.Final/1e9)
	}
	if d := c.CC; d != nil && d.RTTSamples > 0 {
		fmt.Fprintf(tw, "  %sRTT	%d samples  min %.1f µs  max %.1f µs\n", who, d.RTTSamples, d.RTTMinUS, d.RTTMaxUS)
	}
}
