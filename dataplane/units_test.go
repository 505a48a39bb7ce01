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

// MarshalText spells a value as an operator writes it, and
// UnmarshalText reads it back exactly.
func TestUnitsMarshal(t *testing.T) {
	for r, want := range map[Rate]string{0: "0", 1e9: "1G", 25e9: "25G", 2.5e9: "2500M", 100e6: "100M", 1500: "1500", 3000: "3K", 7: "7", 1e12: "1T", 1234567: "1234567"} {
		got, _ := r.MarshalText()
		if string(got) != want {
			t.Errorf("rate %d spelt %q, want %q", r, got, want)
		}
		var back Rate
		if err := back.UnmarshalText(got); err != nil || back != r {
			t.Errorf("rate %q read back as %d, %v; want %d", got, back, err, r)
		}
	}
	for b, want := range map[Bytes]string{0: "0", 1 << 20: "1MiB", 64 << 10: "64KiB", 1536: "1536", 40_000: "40KB", 2_000_000: "2MB", 3 << 30: "3GiB", 1500: "1500"} {
		got, _ := b.MarshalText()
		if string(got) != want {
			t.Errorf("size %d spelt %q, want %q", b, got, want)
		}
		var back Bytes
		if err := back.UnmarshalText(got); err != nil || back != b {
			t.Errorf("size %q read back as %d, %v; want %d", got, back, err, b)
		}
	}
}
