package dataplane

import "testing"

func TestUnits(t *testing.T) {
	for s, want := range map[string]Rate{"1G": 1e9, "25Gbps": 25e9, "100M": 100e6, "1.5k": 1500, "7": 7} {
		var r Rate
		if err := r.UnmarshalText([]byte(s)); err != nil || r != want {
			t.Errorf("rate %q = %d, %v; want %d", s, r, err, want)
		}
	}
	for s, want := range map[string]Bytes{"1MiB": 1 << 20, "64KiB": 64 << 10, "1500": 1500, "2KB": 2000} {
		var b Bytes
		if err := b.UnmarshalText([]byte(s)); err != nil || b != want {
			t.Errorf("size %q = %d, %v; want %d", s, b, err, want)
		}
	}
	var r Rate
	var b Bytes
	if r.UnmarshalText([]byte("fast")) == nil || b.UnmarshalText([]byte("-1")) == nil {
		t.Error("bad units accepted")
	}
}
