package perf

import (
	"fmt"
	"io"
	"slices"
	"syscall"
	"time"
)

// perftest's tables, as ib_write_bw and ib_write_lat print them, so that
// an RDMA engineer reads roceperf's figures where they look for them.

const perftestRule = "---------------------------------------------------------------------------------------"

var testNames = map[string]string{"write": "RDMA_Write", "send": "Send", "read": "RDMA_Read"}

// writeHeader prints the test's banner and its table's column names.
func writeHeader(w io.Writer, r *Report) {
	kind := "BW"
	if r.Lat != nil {
		kind = "Latency"
	}
	fmt.Fprintln(w, perftestRule)
	fmt.Fprintf(w, "                    %s %s Test (roceperf)\n", testNames[r.Op], kind)
	fmt.Fprintf(w, " Transport: %s   Number of qps: %d   MTU: %d   TX depth: %d   verified end to end\n",
		r.Transport, r.QPs, r.MTU, r.Depth)
	if r.Reverse != nil {
		fmt.Fprintln(w, " Bidirectional: both ways at once; the table sums them")
	}
	fmt.Fprintln(w, perftestRule)
	if r.Lat != nil {
		fmt.Fprintln(w, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
		return
	}
	unit := "MB/sec"
	if r.gbits {
		unit = "Gb/sec"
	}
	fmt.Fprintf(w, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", unit, unit)
}

// writeRow prints one run as a row of the table writeHeader began.
func writeRow(w io.Writer, r *Report) {
	if l := r.Lat; l != nil {
		fmt.Fprintf(w, " %-7d %-10d     %-7.2f        %-7.2f      %-7.2f            %-7.2f        %-7.2f          %-7.2f                %-7.2f\n",
			r.Size, r.Messages, l.Min, l.Max, l.Typical, l.Avg, l.Stdev, l.P99, l.P999)
		return
	}
	peak, avg, rate := r.BWPeakGbps, r.GoodputGbps, r.MsgRateMpps
	if v := r.Reverse; v != nil {
		// perftest -b reports both ways together.
		peak, avg, rate = peak+v.BWPeakGbps, avg+v.GoodputGbps, rate+v.MsgRateMpps
	}
	fmt.Fprintf(w, " %-10d %-10d       %-10.2f         %-10.2f           %.6f\n",
		r.Size, r.Messages, bwUnit(peak, r.gbits), bwUnit(avg, r.gbits), rate)
}

// bwUnit converts Gbit/s to the table's unit: Gb/sec, or perftest's
// default MB/sec of 2^20 bytes.
func bwUnit(gbps float64, gbits bool) float64 {
	if gbits {
		return gbps
	}
	return gbps * 1e9 / 8 / (1 << 20)
}

// peakGbps is perftest's BW peak: the size over the shortest time per
// message of any stretch of consecutive messages, from the i-th post to
// the j-th completion, divided by the j-i+1 messages in it (perftest's
// opt_delta). posts and dones are the times of the posts and of the
// completions, each in the order they happened; both are sorted here.
// Like perftest's inc_accuracy, i and j step so that at most about a
// million stretches are tried.
func peakGbps(posts, dones []int64, size int) float64 {
	n := min(len(posts), len(dones))
	if n == 0 {
		return 0
	}
	p, d := slices.Clone(posts[:n]), slices.Clone(dones[:n])
	slices.Sort(p)
	slices.Sort(d)
	step := max(1, n/1000)
	best := int64(-1)
	var bestK int
	for i := 0; i < n; i += step {
		for j := n - 1; j >= i; j -= step {
			t := d[j] - p[i]
			k := j - i + 1
			if t > 0 && (best < 0 || t*int64(bestK) < best*int64(k)) {
				best, bestK = t, k
			}
		}
	}
	if best <= 0 {
		return 0
	}
	return float64(size) * 8 * float64(bestK) / float64(best)
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sweepSizes are -a's sizes: 2 B to 8 MiB by powers of two, as perftest.
func sweepSizes() []int {
	var s []int
	for b := 2; b <= MaxSweep; b <<= 1 {
		s = append(s, b)
	}
	return s
}

// writeSweepSummary ends -a's table with what every size's run verified
// and recovered, summed.
func writeSweepSummary(w io.Writer, reps []*Report) {
	var verified int64
	var corrupt int
	var retx, timeouts uint64
	for _, r := range reps {
		verified += r.VerifiedBytes
		corrupt += r.Corrupt
		retx += r.RetxPackets
		timeouts += r.Timeouts
		if r.Server != nil {
			retx += r.Server.RetxPackets
			timeouts += r.Server.Timeouts
		}
	}
	fmt.Fprintf(w, "  %d sizes: verified %d bytes, %d corrupt; retransmitted %d packets, %d timeouts (both ends)\n",
		len(reps), verified, corrupt, retx, timeouts)
	for _, r := range reps {
		if r.Error != "" {
			fmt.Fprintf(w, "  %d B: %s\n", r.Size, r.Error)
		}
	}
}
