package dataplane

import (
	"fmt"
	"strconv"
	"strings"
)

// Rate is a rate in bits per second, written in configuration as a number
// with an optional K, M, G or T suffix (powers of 1000) and an optional
// "bps" or "bit/s": "1G", "25Gbps", "100M". Every config file of the
// project spells rates this way; YAML and JSON decoders use UnmarshalText.
type Rate uint64

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rate) UnmarshalText(b []byte) error {
	s := string(b)
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bit/s"), "bps")
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K', 'k':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'G':
			mult = 1e9
		case 'T':
			mult = 1e12
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(f >= 0) || f*mult > 1e15 {
		return fmt.Errorf("rate %q: want a number with an optional K, M, G or T suffix", s)
	}
	*r = Rate(f * mult)
	return nil
}

// MarshalText implements encoding.TextMarshaler, spelling the rate as
// configuration files do: with the largest suffix that keeps it a whole
// number, "10G", "2500M", "0"; UnmarshalText reads it back exactly.
func (r Rate) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		suffix string
		n      Rate
	}{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if r != 0 && r%u.n == 0 {
			return append(strconv.AppendUint(nil, uint64(r/u.n), 10), u.suffix...), nil
		}
	}
	return strconv.AppendUint(nil, uint64(r), 10), nil
}

// Bytes is a size in bytes, written in configuration as a number with an
// optional KiB, MiB or GiB suffix (powers of 1024) or KB, MB, GB (powers of
// 1000): "1MiB", "64KiB", "1500".
type Bytes int

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Bytes) UnmarshalText(v []byte) error {
	s := string(v)
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(f >= 0) || f*mult > 1<<40 {
		return fmt.Errorf("size %q: want a number with an optional KiB, MiB, GiB, KB, MB or GB suffix", s)
	}
	*b = Bytes(f * mult)
	return nil
}

// MarshalText implements encoding.TextMarshaler, spelling the size as
// configuration files do: with the largest binary suffix that keeps it a
// whole number ("64KiB", "1MiB"), else the largest decimal one ("40KB"),
// else plain bytes ("1500"); UnmarshalText reads it back exactly.
func (b Bytes) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		suffix string
		n      Bytes
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if b != 0 && b%u.n == 0 {
			return append(strconv.AppendInt(nil, int64(b/u.n), 10), u.suffix...), nil
		}
	}
	return strconv.AppendInt(nil, int64(b), 10), nil
}
