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
		// The sample mean converges on Mean.
		r := rand.New(rand.NewPCG(1, 2))
		sum, n := 0.0, 200000
		for i := 0; i < n; i++ {
			sum += float64(d.Sample(r.Float64()))
		}
		if m := sum / float64(n); math.Abs(m-d.Mean())/d.Mean() > 0.1 {
			t.Errorf("%s: sample mean %.0f, Mean %.0f", name, m, d.Mean())
		}
	}
	d, _ := LoadCDF("websearch")
	if s := d.Sample(0.15); s != 10000 {
		t.Errorf("websearch at 15%%: %d, want 10000", s)
	}
}

func TestPoissonLoad(t *testing.T) {
	d, _ := LoadCDF("websearch")
	r := rand.New(rand.NewPCG(7, 7))
	const hosts, dur = 16, int64(100e6) // 100 ms
	fs := Poisson(hosts, d, 0.5, 10e9, dur, 0, r)
	bytes := 0
	for _, f := range fs {
		if f.Src == f.Dst || f.Start >= dur {
			t.Fatalf("bad flow %+v", f)
		}
		bytes += f.Size
	}
	load := float64(bytes) * 8 / (float64(dur) / 1e9) / (hosts * 10e9)
	if load < 0.35 || load > 0.65 {
		t.Errorf("offered load %.2f, want about 0.5", load)
	}
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
