package workload

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"time"
)

// Where incast senders come from (Spec.IncastFrom).
const (
	FromSame  = "same"  // the receiver's rack first, then the hosts after it
	FromRacks = "racks" // hosts of other racks only
	FromAny   = "any"   // any host but the receiver
)

// SeqIncastSize and SeqIncastGap are sequential-incast's defaults: "Senders
// transmit 500 KB of data sequentially to a single receiver at 10 μs
// intervals" (NetRT, seed 000, §IV-B 1, Congestion Loss).
const (
	SeqIncastSize = 500_000
	SeqIncastGap  = 10 * time.Microsecond
)

// IncastSenders picks n senders for receiver dst among hosts whose racks
// racks gives (nil: one rack). FromSame takes dst's rack-mates in host
// order, then the hosts after dst in host order (wrapping), at most
// hosts−1 of them; FromAny draws n distinct hosts other than dst;
// FromRacks draws from the other racks in turn (a random rack order,
// random hosts within each), so that senders spread over racks. FromAny
// and FromRacks fail when fewer than n hosts qualify.
func IncastSenders(hosts, dst, n int, from string, racks []int, r *rand.Rand) ([]int, error) {
	rack := func(h int) int {
		if racks == nil {
			return 0
		}
		return racks[h]
	}
	var out []int
	switch from {
	case FromSame, "":
		for h := 0; h < hosts && len(out) < n; h++ {
			if h != dst && rack(h) == rack(dst) {
				out = append(out, h)
			}
		}
		for i := 1; i < hosts && len(out) < n; i++ {
			if h := (dst + i) % hosts; rack(h) != rack(dst) {
				out = append(out, h)
			}
		}
		return out, nil
	case FromAny:
		if n > hosts-1 {
			return nil, fmt.Errorf("incast: %d senders from any host, but %d hosts besides the receiver", n, hosts-1)
		}
		c := make([]int, 0, hosts-1)
		for h := 0; h < hosts; h++ {
			if h != dst {
				c = append(c, h)
			}
		}
		r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		return c[:n], nil
	case FromRacks:
		byRack := map[int][]int{}
		var ids []int
		total := 0
		for h := 0; h < hosts; h++ {
			k := rack(h)
			if k == rack(dst) {
				continue
			}
			if _, ok := byRack[k]; !ok {
				ids = append(ids, k)
			}
			byRack[k] = append(byRack[k], h)
			total++
		}
		if n > total {
			return nil, fmt.Errorf("incast: %d senders from other racks, but %d hosts there", n, total)
		}
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for _, k := range ids {
			l := byRack[k]
			r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		}
		for i := 0; len(out) < n; i++ {
			for _, k := range ids {
				if l := byRack[k]; i < len(l) && len(out) < n {
					out = append(out, l[i])
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("incast: from %q: want same, racks or any", from)
}

// incastFrom is where the Spec's incast senders come from.
func (s Spec) incastFrom(def string) string {
	switch {
	case s.IncastFrom != "":
		return s.IncastFrom
	case s.Background:
		return FromAny
	}
	return def
}

// receiver is the receiver of one burst.
func (s Spec) receiver(hosts int, r *rand.Rand) (int, error) {
	if s.IncastTo < 0 || s.Background && s.IncastTo == 0 {
		return r.IntN(hosts), nil
	}
	if s.IncastTo >= hosts {
		return 0, fmt.Errorf("incast: receiver %d, but %d hosts", s.IncastTo, hosts)
	}
	return s.IncastTo, nil
}

// burstTimes are the start times (ns) of incast's bursts: one at 0, or
// every IncastPeriod below Duration, or Poisson arrivals below Duration
// at the rate that makes bursts of bytes bytes offer IncastLoad of
// hosts links of rateBps.
func (s Spec) burstTimes(hosts, bytes int, rateBps uint64, r *rand.Rand) []int64 {
	switch {
	case s.IncastLoad > 0:
		gap := float64(bytes) * 8 / (s.IncastLoad * float64(hosts) * float64(rateBps)) * 1e9
		var out []int64
		for t := r.ExpFloat64() * gap; t < float64(s.Duration); t += r.ExpFloat64() * gap {
			out = append(out, int64(t))
		}
		return out
	case s.IncastPeriod > 0:
		var out []int64
		for t := time.Duration(0); t < s.Duration; t += s.IncastPeriod {
			out = append(out, t.Nanoseconds())
		}
		return out
	}
	return []int64{0}
}

// incast is the incast generator: bursts of Incast senders, each
// sending IncastSize (or Size) to one receiver at once.
func (s Spec) incast(hosts int, rateBps uint64, r *rand.Rand) ([]Flow, error) {
	size := s.IncastSize
	if size == 0 {
		size = s.Size
	}
	if hosts < 2 {
		return nil, fmt.Errorf("incast: %d hosts", hosts)
	}
	var out []Flow
	for _, t := range s.burstTimes(hosts, s.Incast*size, rateBps, r) {
		dst, err := s.receiver(hosts, r)
		if err != nil {
			return nil, err
		}
		senders, err := IncastSenders(hosts, dst, s.Incast, s.incastFrom(FromSame), s.Racks, r)
		if err != nil {
			return nil, err
		}
		fl := Incast(senders, dst, size)
		for i := range fl {
			fl[i].Start = t
		}
		out = append(out, fl...)
	}
	return out, nil
}

// sequentialIncast is NetRT's many-to-one congestion scenario (seed 000,
// §IV-B 1): Incast senders (NetRT varies 15 to 50), each on another rack
// by default ("each server is connected to a core switch via its ToR
// switch"), each sending 500 KB to one receiver, sender k starting at
// k × 10 µs ("sequentially … at 10 μs intervals, creating continuous
// traffic bursts"). IncastSize and IncastPeriod replace the size and the
// gap.
func (s Spec) sequentialIncast(hosts int, r *rand.Rand) ([]Flow, error) {
	size := cmp.Or(s.IncastSize, SeqIncastSize)
	gap := cmp.Or(s.IncastPeriod, SeqIncastGap)
	dst, err := s.receiver(hosts, r)
	if err != nil {
		return nil, err
	}
	senders, err := IncastSenders(hosts, dst, s.Incast, s.incastFrom(FromRacks), s.Racks, r)
	if err != nil {
		return nil, err
	}
	out := Incast(senders, dst, size)
	for k := range out {
		out[k].Start = int64(k) * gap.Nanoseconds()
	}
	return out, nil
}
