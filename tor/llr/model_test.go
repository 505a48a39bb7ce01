package llr

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// model is the receiver as the paper states it, over unbounded integers:
// Algorithm 1 (Blocking) or forward-once (NonBlocking), no timeouts.
type model struct {
	nb      bool
	ackNo   int
	have    map[int]bool
	deliver []int
}

func (m *model) arrive(s int) {
	if s < m.ackNo || m.have[s] {
		return // duplicate
	}
	if m.nb {
		m.deliver = append(m.deliver, s)
		m.have[s] = true
		for m.have[m.ackNo] {
			delete(m.have, m.ackNo)
			m.ackNo++
		}
		return
	}
	if s != m.ackNo {
		m.have[s] = true
		return
	}
	m.deliver = append(m.deliver, s)
	m.ackNo++
	for m.have[m.ackNo] {
		delete(m.have, m.ackNo)
		m.deliver = append(m.deliver, m.ackNo)
		m.ackNo++
	}
}

// TestReceiverModel feeds the port wrapper and the model the same
// arrivals — each sequence lost with some probability and resent later,
// some duplicated, across several era wraps — and compares what each
// forwards, in order.
func TestReceiverModel(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(m.String(), func(t *testing.T) { receiverModel(t, m, seed) })
		}
	}
}

func receiverModel(t *testing.T, mode Mode, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStage(Config{Ports: 1, Mode: mode, RxBuffer: 4 << 20, Pause: 4 << 20, Resume: 1})
	if err != nil {
		t.Fatal(err)
	}
	inner := dataplane.NewMemPort("l", rocev2.MAC{2}, mem, 4096)
	lp, err := st.Wrap(0, inner, mem)
	if err != nil {
		t.Fatal(err)
	}
	const n = 150000
	// Arrivals: the stream in order, with each sequence lost (resent
	// 1–300 arrivals later) or duplicated now and then.
	var arr []int
	late := map[int][]int{}
	for s, i := 0, 0; s < n || len(late) > 0; i++ {
		for _, r := range late[i] {
			arr = append(arr, r)
		}
		delete(late, i)
		if s >= n {
			continue
		}
		switch x := rng.Float64(); {
		case x < 0.02:
			k := i + 1 + rng.IntN(300)
			late[k] = append(late[k], s)
		case x < 0.03:
			arr = append(arr, s, s)
		default:
			arr = append(arr, s)
		}
		s++
	}
	ref := &model{nb: mode == NonBlocking, have: map[int]bool{}}
	var got []int
	f := make([]byte, 64)
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 9})
	binary.BigEndian.PutUint16(f[12:14], rocev2.EtherTypeShim)
	// The neighbour's session first: numbering from 0.
	rocev2.Shim(f[14:22]).SetSync(0, rocev2.SyncNeed, 0, 77)
	if !inner.Inject(f) {
		t.Fatal("inject refused")
	}
	var b dataplane.Batch
	pull := func() {
		for {
			b.N = 0
			if lp.Receive(&b) == 0 {
				return
			}
			for i := 0; i < b.N; i++ {
				fr := mem.Frame(&b.Pkts[i])
				if et := binary.BigEndian.Uint16(fr[12:14]); et != 0x0800 {
					t.Fatalf("delivered frame with EtherType %#x", et)
				}
				got = append(got, int(binary.BigEndian.Uint32(fr[14:18])))
				mem.Release(b.Pkts[i].Addr)
			}
		}
	}
	for i, s := range arr {
		rocev2.Shim(f[14:22]).Set(psn.Link(s%(1<<psn.LinkBits)), rocev2.ShimOriginal, 0, 0x0800)
		binary.BigEndian.PutUint32(f[22:26], uint32(s))
		if !inner.Inject(f) {
			t.Fatal("inject refused")
		}
		ref.arrive(s)
		if i%37 == 0 {
			pull()
		}
	}
	pull()
	if !slices.Equal(got, ref.deliver) {
		k := 0
		for k < min(len(got), len(ref.deliver)) && got[k] == ref.deliver[k] {
			k++
		}
		t.Fatalf("forwarded %d, model %d; first difference at %d: got %v, model %v", len(got), len(ref.deliver), k,
			got[k:min(k+5, len(got))], ref.deliver[k:min(k+5, len(ref.deliver))])
	}
	if len(got) != n {
		t.Fatalf("forwarded %d of %d", len(got), n)
	}
	if p := st.Stats().Ports[0]; p.RxBytesMax > 4<<20 || mem.InUse() != 0 {
		t.Fatalf("buffer high-water %d, frames in use %d", p.RxBytesMax, mem.InUse())
	}
}
