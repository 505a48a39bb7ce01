package workload

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestCDFs(t *testing.T) {
	for _, name := range []string{"websearch", "datamining", "hadoop"} {
		d, err := LoadCDF(name)
		if err != nil {
			t.Fatal(err)
		}
		// The sample mean converges on Mean, sizes capped or not.
		for _, top := range []int{0, 3_000_000, 100_000} {
			r := rand.New(rand.NewPCG(1, 2))
			sum, n := 0.0, 200000
			for i := 0; i < n; i++ {
				s := d.Sample(r.Float64())
				if top > 0 {
					s = min(s, top)
				}
				sum += float64(s)
			}
			if m := sum / float64(n); math.Abs(m-d.Mean(top))/d.Mean(top) > 0.05 {
				t.Errorf("%s capped at %d: sample mean %.0f, Mean %.0f", name, top, m, d.Mean(top))
			}
		}
	}
	d, _ := LoadCDF("websearch")
	if s := d.Sample(0.15); s != 10000 {
		t.Errorf("websearch at 15%%: %d, want 10000", s)
	}
}

// TestPoissonLoad: the flows offer the load asked, also with their sizes
// capped (irn-fabric's WebSearch at 3 MB, whose gaps once followed the
// uncapped mean and offered 47.9 % of it).
func TestPoissonLoad(t *testing.T) {
	d, _ := LoadCDF("websearch")
	const hosts, dur = 16, int64(100e6) // 100 ms
	for _, maxSize := range []int{0, 3_000_000, 100_000} {
		fs := Poisson(hosts, d, 0.5, 10e9, dur, maxSize, rand.New(rand.NewPCG(7, 7)))
		bytes := 0
		for _, f := range fs {
			if f.Src == f.Dst || f.Start >= dur || maxSize > 0 && f.Size > maxSize {
				t.Fatalf("max size %d: bad flow %+v", maxSize, f)
			}
			bytes += f.Size
		}
		load := float64(bytes) * 8 / (float64(dur) / 1e9) / (hosts * 10e9)
		if load < 0.4 || load > 0.6 {
			t.Errorf("max size %d: offered load %.3f, want about 0.5", maxSize, load)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	fs := Poisson(hosts, d, 0.5, 10e9, dur, 0, r)
	if !slices.IsSortedFunc(fs, func(a, b Flow) int { return int(a.Start - b.Start) }) {
		t.Error("flows not sorted by start")
	}
	again := Poisson(hosts, d, 0.5, 10e9, dur, 0, rand.New(rand.NewPCG(7, 7)))
	if !slices.Equal(fs, again) {
		t.Error("same seed, different flows")
	}
}

func TestPatterns(t *testing.T) {
	p := Permutation(8, 100, rand.New(rand.NewPCG(1, 1)))
	in := map[int]int{}
	for _, f := range p {
		if f.Src == f.Dst {
			t.Fatalf("self flow %+v", f)
		}
		in[f.Dst]++
	}
	if len(in) != 8 {
		t.Fatalf("permutation reaches %d hosts, want 8", len(in))
	}
	if n := len(AllToAll(5, 1)); n != 20 {
		t.Fatalf("all-to-all of 5: %d flows", n)
	}
	ar := RingAllReduce(4, 4000)
	if len(ar) != 24 || ar[4].After != 3 || ar[5].After != 0 || ar[0].Size != 1000 {
		t.Fatalf("ring all-reduce: %+v", ar[:6])
	}
	var b bytes.Buffer
	if err := Write(&b, ar); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&b)
	if err != nil || !slices.Equal(back, ar) {
		t.Fatalf("traffic file round trip: %v", err)
	}
}

func TestConnectionMatrix(t *testing.T) {
	cm := "Nodes 4\nConnections 2\n0->3 id 1 start 0 size 2000000\n2->1 id 2 start 5000000 size 100\n"
	fs, err := Read(strings.NewReader(cm))
	if err != nil {
		t.Fatal(err)
	}
	want := []Flow{{Src: 0, Dst: 3, Size: 2000000, After: -1}, {Src: 2, Dst: 1, Size: 100, Start: 5000, After: -1}}
	if !slices.Equal(fs, want) {
		t.Fatalf("got %+v", fs)
	}
}
