package nic_test

import (
	"fmt"
	"math"
	"net/netip"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/dcp"
	"rocetor/nic/fasr"
	"rocetor/nic/gbn"
	"rocetor/nic/irn"
	"rocetor/nic/nictest"
)

// srTransports builds each transport for a BDP of bdp packets, the same
// way: the window (gbn's, IRN's BDP-FC cap and bitmap span, FaSR's) is
// bdp packets and FaSR's shared pool is sized for bdp. DCP's state does
// not depend on the BDP (nic.SRState.BDP 0): it tracks Messages (8).
func srTransports(tb testing.TB, bdp int) []func() nic.Transport {
	must := func(t nic.Transport, err error) nic.Transport {
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
	return []func() nic.Transport{
		func() nic.Transport { return must(gbn.New(gbn.Config{Window: bdp})) },
		func() nic.Transport { return must(irn.New(irn.Config{Window: bdp})) },
		func() nic.Transport { return must(fasr.New(fasr.Config{Window: bdp, BDP: bdp})) },
		func() nic.Transport { return must(dcp.New(dcp.Config{})) },
	}
}

// srQPs are the QP counts of seed 001's Fig. 8(b) and sr-concurrency.
var srQPs = []int{16, 256, 1024, 5000}

// crossover returns the smallest QP count at which f(n) < g(n) from there
// on, for f and g affine in n (a per-QP slope and a fixed part) and
// measured at lo and hi; 0 if f is never below g up to 1<<20.
func crossover(f, g func(n int) float64, lo, hi int) int {
	sf, sg := (f(hi)-f(lo))/float64(hi-lo), (g(hi)-g(lo))/float64(hi-lo)
	if sf >= sg {
		if f(lo) < g(lo) {
			return 1
		}
		return 0
	}
	// f(lo) + sf (n-lo) < g(lo) + sg (n-lo)
	n := lo + int(math.Floor((f(lo)-g(lo))/(sg-sf))) + 1
	return max(n, 1)
}

// TestSRMemoryTable produces docs/experiments.md's SR-memory table: for
// a BDP of 128 and of 500 packets, (a) each transport's SR state
// (nic.SRState: what selective repeat keeps beyond Go-Back-N) for an
// endpoint with 16 to 5,000 QPs, and (b) every byte those QPs cost the
// endpoint, measured on the heap (nictest.EndpointHeap); with the QP
// count from which FaSR's figure is below IRN's. It checks what the docs
// state: (a) is the per-QP state for each QP plus the shared pool, (b)
// holds (a), and FaSR's SR state is 10× below IRN's at 5,000 QPs at the
// seed's BDP of 500 packets.
//
//	go test -count=1 -run TestSRMemoryTable -v ./nic
func TestSRMemoryTable(t *testing.T) {
	var md strings.Builder
	for _, bdp := range []int{128, 500} {
		mks := srTransports(t, bdp)
		names := make([]string, len(mks))
		sr := make([]nic.SRState, len(mks))
		heap := make([]map[int]float64, len(mks))
		ctx, queues := make([]int, len(mks)), make([]int, len(mks))
		for i, mk := range mks {
			tr := mk()
			names[i], sr[i], heap[i] = tr.Name(), tr.SRState(), map[int]float64{}
			e, err := nic.NewEndpoint(nic.Config{Transport: mk(), IP: netip.MustParseAddr("10.0.0.1"),
				Egress: dataplane.DefaultEgress(0, 64<<10), MaxQPs: 1, CQDepth: 16})
			if err != nil {
				t.Fatal(err)
			}
			ctx[i], queues[i] = e.QPBytes()
			for _, n := range srQPs {
				heap[i][n] = float64(nictest.EndpointHeap(t, mk, n))
				if a := sr[i].Bytes(n); heap[i][n] < float64(a) {
					t.Errorf("BDP %d, %s, %d QPs: %v B of heap hold less than its %d B of SR state", bdp, names[i], n, heap[i][n], a)
				}
			}
		}
		fmt.Fprintf(&md, "\nBDP %d packets (1 KiB MTU)\n\n", bdp)
		fmt.Fprintf(&md, "| transport | SR per QP (B) | SR shared (B) | sized for (packets) | (a) SR state at 16 / 256 / 1,024 / 5,000 QPs (B) | (b) heap per QP at 16 / 256 / 1,024 / 5,000 QPs (B) | of which context + queues (B) |\n")
		fmt.Fprintf(&md, "| --- | --: | --: | --: | --: | --: | --: |\n")
		for i := range mks {
			var a, b []string
			for _, n := range srQPs {
				a = append(a, fmtInt(sr[i].Bytes(n)))
				b = append(b, fmtInt(int(math.Round(heap[i][n]/float64(n)))))
			}
			sized := "–"
			if sr[i].BDP > 0 {
				sized = fmt.Sprint(sr[i].BDP)
			}
			fmt.Fprintf(&md, "| %s | %d | %d | %s | %s | %s | %d + %s |\n", names[i], sr[i].PerQP, sr[i].Shared, sized,
				strings.Join(a, " / "), strings.Join(b, " / "), ctx[i], fmtInt(queues[i]))
			for _, n := range srQPs {
				if got := sr[i].Bytes(n); got != sr[i].PerQP*n+sr[i].Shared {
					t.Errorf("%s: %d B at %d QPs", names[i], got, n)
				}
			}
		}
		const g, ir, fa, dc = 0, 1, 2, 3
		// The figures docs/experiments.md gives: gbn none, IRN four
		// bitmaps of 128 or 512 bits and 16 B of pointers, FaSR 8 B and
		// a pool of 6 units and 18 blocks (BDP 128) or 20 and 70 (500),
		// DCP 8 messages × 24 B and 5 B whatever the BDP.
		want := map[int][]nic.SRState{
			128: {{}, {PerQP: 4*128/8 + 16, BDP: 128}, {PerQP: 8, Shared: 6*24 + 8 + 18*4 + 8, BDP: 128}, {PerQP: 8*24 + 5}},
			500: {{}, {PerQP: 4*512/8 + 16, BDP: 512}, {PerQP: 8, Shared: 20*24 + 8 + 70*4 + 16, BDP: 500}, {PerQP: 8*24 + 5}},
		}[bdp]
		for i := range sr {
			if sr[i] != want[i] {
				t.Errorf("BDP %d: %s's SR state %+v, want %+v", bdp, names[i], sr[i], want[i])
			}
		}
		a := func(i int) func(int) float64 { return func(n int) float64 { return float64(sr[i].Bytes(n)) } }
		b := func(i int) func(int) float64 { return func(n int) float64 { return heap[i][n] } }
		lo, hi := srQPs[0], srQPs[len(srQPs)-1]
		ratio := float64(sr[ir].Bytes(hi)) / float64(sr[fa].Bytes(hi))
		fmt.Fprintf(&md, "\n(a) at 5,000 QPs: IRN/FaSR %.1f×, DCP/FaSR %.1f×; FaSR's is below IRN's %s, below DCP's %s.\n",
			ratio, float64(sr[dc].Bytes(hi))/float64(sr[fa].Bytes(hi)), cross(crossover(a(fa), a(ir), lo, hi)), cross(crossover(a(fa), a(dc), lo, hi)))
		fmt.Fprintf(&md, "(b) at 5,000 QPs: IRN/FaSR %.2f×, DCP/FaSR %.2f×, FaSR/gbn %.2f×; FaSR's is below IRN's %s, below DCP's %s.\n",
			heap[ir][hi]/heap[fa][hi], heap[dc][hi]/heap[fa][hi], heap[fa][hi]/heap[g][hi],
			cross(crossover(b(fa), b(ir), lo, hi)), cross(crossover(b(fa), b(dc), lo, hi)))
		if bdp == 500 && ratio < 10 {
			t.Errorf("BDP 500, 5,000 QPs: FaSR's SR state %d B is only %.1f× below IRN's %d B; the seed claims 10×",
				sr[fa].Bytes(hi), ratio, sr[ir].Bytes(hi))
		}
	}
	t.Log(md.String())
}

func cross(n int) string {
	if n == 0 {
		return "at no QP count"
	}
	if n == 1 {
		return "from 1 QP"
	}
	return "from " + fmtInt(n) + " QPs"
}

// fmtInt writes n with thousands separators.
func fmtInt(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
