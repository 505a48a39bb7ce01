package workload

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// racks4 is 16 hosts in 4 racks of 4, numbered rack by rack as
// tor/fabric numbers them.
var racks4 = []int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}

func rng() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

func flows(t *testing.T, s Spec, hosts int) []Flow {
	t.Helper()
	fl, err := s.Flows(hosts, 100e9, rng())
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// TestIncastAsBefore: incast alone is hosts 1 … N into host 0 at once,
// whatever the racks.
func TestIncastAsBefore(t *testing.T) {
	for _, racks := range [][]int{nil, racks4} {
		fl := flows(t, Spec{Name: "incast", Incast: 8, Size: 1000, Racks: racks}, 16)
		if len(fl) != 8 {
			t.Fatalf("%d flows, want 8", len(fl))
		}
		for i, f := range fl {
			if f.Src != i+1 || f.Dst != 0 || f.Size != 1000 || f.Start != 0 || f.After != -1 {
				t.Errorf("flow %d: %+v", i, f)
			}
		}
	}
}

func TestIncastFrom(t *testing.T) {
	for _, c := range []struct {
		from  string
		n     int
		check func(src, dst int) bool
	}{
		{FromSame, 3, func(s, d int) bool { return racks4[s] == racks4[d] }},
		{FromRacks, 9, func(s, d int) bool { return racks4[s] != racks4[d] }},
		{FromAny, 15, func(s, d int) bool { return s != d }},
	} {
		fl := flows(t, Spec{Name: "incast", Incast: c.n, IncastFrom: c.from, IncastTo: 5, Size: 1000, Racks: racks4}, 16)
		var srcs []int
		perRack := map[int]int{}
		for _, f := range fl {
			if f.Dst != 5 || !c.check(f.Src, f.Dst) {
				t.Errorf("%s: flow %+v", c.from, f)
			}
			srcs = append(srcs, f.Src)
			perRack[racks4[f.Src]]++
		}
		slices.Sort(srcs)
		if len(fl) != c.n || len(slices.Compact(srcs)) != c.n {
			t.Errorf("%s: senders %v, want %d distinct", c.from, srcs, c.n)
		}
		// racks: round-robin over the 3 other racks, 3 each.
		if c.from == FromRacks && (len(perRack) != 3 || perRack[0] != 3 || perRack[2] != 3 || perRack[3] != 3) {
			t.Errorf("racks: senders per rack %v, want 3 in each other rack", perRack)
		}
	}
	if _, err := (Spec{Name: "incast", Incast: 13, IncastFrom: FromRacks, Racks: racks4}).Flows(16, 100e9, rng()); err == nil {
		t.Error("13 senders from the 12 hosts of other racks: no error")
	}
	if _, err := (Spec{Name: "incast", Incast: 2, IncastFrom: "rack"}).Flows(16, 100e9, rng()); err == nil {
		t.Error("from rack: no error")
	}
}

func TestIncastPeriod(t *testing.T) {
	s := Spec{Name: "incast", Incast: 4, Size: 1000, IncastSize: 64000, IncastPeriod: 100 * time.Microsecond,
		Duration: time.Millisecond, IncastFrom: FromAny, IncastTo: -1, Racks: racks4}
	fl := flows(t, s, 16)
	if len(fl) != 40 {
		t.Fatalf("%d flows, want 10 bursts of 4", len(fl))
	}
	dsts := map[int]bool{}
	for i, f := range fl {
		if want := int64(i/4) * 100_000; f.Start != want || f.Size != 64000 || f.Src == f.Dst {
			t.Errorf("flow %d: %+v, want start %d, size 64000", i, f, want)
		}
		dsts[f.Dst] = true
		if i%4 > 0 && f.Dst != fl[i-1].Dst {
			t.Errorf("flow %d: burst with two receivers", i)
		}
	}
	if len(dsts) < 3 {
		t.Errorf("random receivers: only %v", dsts)
	}
}

// TestIncastLoad: Poisson bursts offer the load asked of all hosts' links.
func TestIncastLoad(t *testing.T) {
	s := Spec{Name: "incast", Incast: 8, Size: 100_000, IncastLoad: 0.05, Duration: 100 * time.Millisecond, IncastTo: -1, IncastFrom: FromAny}
	fl := flows(t, s, 16)
	bytes := 0
	for _, f := range fl {
		bytes += f.Size
	}
	load := float64(bytes) * 8 / (16 * 100e9 * 0.1)
	if load < 0.045 || load > 0.055 {
		t.Errorf("offered load %.4f, want 0.05", load)
	}
}

// TestSequentialIncast: NetRT §IV-B's many-to-one: 500 KB per sender, one
// every 10 µs, each on its own rack while racks last.
func TestSequentialIncast(t *testing.T) {
	racks := make([]int, 32) // 16 racks of 2
	for h := range racks {
		racks[h] = h / 2
	}
	for _, n := range []int{15, 30} {
		fl := flows(t, Spec{Name: "sequential-incast", Incast: n, Racks: racks}, 32)
		if len(fl) != n {
			t.Fatalf("%d flows, want %d", len(fl), n)
		}
		seen := map[int]int{}
		for k, f := range fl {
			if f.Dst != 0 || f.Size != 500_000 || f.Start != int64(k)*10_000 || racks[f.Src] == 0 {
				t.Errorf("flow %d: %+v", k, f)
			}
			seen[racks[f.Src]]++
		}
		if len(seen) != 15 {
			t.Errorf("%d senders over %d racks, want all 15 other racks", n, len(seen))
		}
	}
	fl := flows(t, Spec{Name: "sequential-incast", Incast: 3, IncastSize: 1000, IncastPeriod: time.Microsecond, IncastFrom: FromAny}, 8)
	if fl[2].Start != 2000 || fl[2].Size != 1000 {
		t.Errorf("size and gap not taken: %+v", fl[2])
	}
}

// TestComposition: poisson+incast is poisson's flows as alone, then an
// incast whose receivers and senders are drawn (as DCP's mixed
// workload); After indices stay on their own part.
func TestComposition(t *testing.T) {
	base := Spec{CDF: "websearch", Load: 0.3, Duration: 200 * time.Microsecond, Incast: 8, Size: 10_000,
		IncastPeriod: 50 * time.Microsecond, Racks: racks4}
	p := base
	p.Name = "poisson"
	alone := flows(t, p, 16)
	base.Name = "poisson+incast"
	mixed := flows(t, base, 16)
	if len(mixed) != len(alone)+4*8 || !slices.Equal(mixed[:len(alone)], alone) {
		t.Fatalf("poisson+incast: %d flows, poisson alone %d; poisson's must come first, unchanged", len(mixed), len(alone))
	}
	dsts := map[int]bool{}
	for _, f := range mixed[len(alone):] {
		dsts[f.Dst] = true
	}
	if len(dsts) < 2 {
		t.Errorf("incast beside poisson: receivers %v, want drawn per burst", dsts)
	}
	seq := flows(t, Spec{Name: "sequence+sequence", Count: 3, Depth: 1, Size: 1}, 4)
	if len(seq) != 6 || seq[4].After != 3 || seq[3].After != -1 {
		t.Errorf("sequence+sequence: %+v", seq)
	}
	if _, err := (Spec{Name: "poisson+nothing", CDF: "websearch"}).Flows(4, 1e9, rng()); err == nil || !strings.Contains(err.Error(), "nothing") {
		t.Errorf("unknown part: %v", err)
	}
}

func TestWorkloadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.json")
	os.WriteFile(path, []byte(`{"workloads": [
	  {"workload": "sequence", "count": 2, "size": "4KB"},
	  {"workload": "incast", "start": "200us", "incast": 3, "incast-from": "racks", "incast-to": 4,
	   "incast-size": 1000, "incast-period": "100us", "duration": "400us"},
	  {"workload": "sequential-incast", "start": "1ms", "incast": 2, "incast-to": "random"}
	]}`), 0o644)
	base := Spec{Name: "permutation", Size: 7, Count: 100, Depth: 1, Racks: racks4}
	s, err := ReadSpecs(path, base)
	if err != nil {
		t.Fatal(err)
	}
	fl := flows(t, s, 16)
	// The incast's duration counts from its start: 4 bursts.
	if len(fl) != 2+4*3+2 {
		t.Fatalf("%d flows, want 2 + 4×3 + 2", len(fl))
	}
	if fl[0].Size != 4000 || fl[1].After != 0 || fl[1].Start != 0 {
		t.Errorf("sequence: %+v %+v", fl[0], fl[1])
	}
	for i, f := range fl[2:14] {
		if want := 200_000 + int64(i/3)*100_000; f.Start != want || f.Dst != 4 || f.Size != 1000 || racks4[f.Src] == 1 {
			t.Errorf("incast flow %d: %+v, want start %d", i, f, want)
		}
	}
	if fl[14].Start != 1_000_000 || fl[15].Start != 1_010_000 || fl[14].Size != SeqIncastSize {
		t.Errorf("sequential-incast: %+v %+v", fl[14], fl[15])
	}
	again := flows(t, s, 16)
	if !slices.Equal(fl, again) {
		t.Error("same seed, different flows")
	}
	for _, bad := range []string{`{"workloads": [{"workload": "incast", "colour": 1}]}`, `{"workloads": []}`,
		`{"workloads": [{"count": 1}]}`, `{"workloads": [{"workload": "poisson+incast"}]}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if s, err := ReadSpecs(path, base); err == nil {
			if _, err = s.Flows(16, 1e9, rng()); err == nil {
				t.Errorf("%s: no error", bad)
			}
		}
	}
}

// TestDeterminism: a seed gives the same flows, composed or not.
func TestDeterminism(t *testing.T) {
	s := Spec{Name: "poisson+incast+sequential-incast", CDF: "websearch", Load: 0.5, Duration: 100 * time.Microsecond,
		Incast: 4, Size: 1000, IncastLoad: 0.1, Racks: racks4}
	a, b := flows(t, s, 16), flows(t, s, 16)
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Errorf("same seed: %d and %d flows, or different", len(a), len(b))
	}
	c, _ := s.Flows(16, 100e9, rand.New(rand.NewPCG(3, 4)))
	if slices.Equal(a, c) {
		t.Error("another seed, the same flows")
	}
}

// TestWorkloadFilePack: Pack hands add every file the entries name (a
// built-in CDF's name is no file) and marks the copy relative; the
// copy, read from another directory, names the files beside it; the
// command line's paths, which no entry sets, are left as they are.
func TestWorkloadFilePack(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	cdf, traffic := filepath.Join(src, "my.cdf"), filepath.Join(src, "t.txt")
	os.WriteFile(cdf, []byte("100 0\n1000 100\n"), 0o644)
	os.WriteFile(traffic, []byte("1\n0 1 1000 0 -1\n"), 0o644)
	path := filepath.Join(src, "w.json")
	os.WriteFile(path, []byte(`{"workloads": [{"workload": "poisson", "cdf": "`+cdf+`"},
	 {"workload": "poisson", "cdf": "websearch"}, {"workload": "file", "traffic": "`+traffic+`"}]}`), 0o644)
	var added []string
	b, err := Pack(path, func(key, p string) (string, error) {
		added = append(added, key+"="+p)
		return filepath.Base(p), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cdf=" + cdf, "traffic=" + traffic}; !slices.Equal(added, want) {
		t.Fatalf("added %v, want %v", added, want)
	}
	copied := filepath.Join(dst, "w.json")
	os.WriteFile(copied, b, 0o644)
	s, err := ReadSpecs(copied, Spec{CDF: "cmdline.cdf", Traffic: "cmdline.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Parts; p[0].CDF != filepath.Join(dst, "my.cdf") || p[1].CDF != "websearch" || p[2].Traffic != filepath.Join(dst, "t.txt") ||
		p[0].Traffic != "cmdline.txt" || p[2].CDF != "cmdline.cdf" {
		t.Errorf("the copy's parts: %+v", p)
	}
	// Without "relative" the same names are the working directory's.
	os.WriteFile(copied, []byte(`{"workloads": [{"workload": "file", "traffic": "t.txt"}]}`), 0o644)
	if s, err := ReadSpecs(copied, Spec{}); err != nil || s.Parts[0].Traffic != "t.txt" {
		t.Errorf("not relative: %+v, %v", s.Parts, err)
	}
	os.WriteFile(path, []byte(`{"workloads": [{"workload": "file", "traffic": "`+filepath.Join(src, "none.txt")+`"}]}`), 0o644)
	if _, err := Pack(path, func(_, p string) (string, error) { _, err := os.Stat(p); return "", err }); err == nil ||
		!strings.Contains(err.Error(), "entry 1: traffic") {
		t.Errorf("a missing traffic file: %v", err)
	}
}
