package fasr_test

import (
	"slices"
	"testing"

	"rocetor/nic"
	"rocetor/nic/fasr"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// dropCopies drops copies of request PSNs: n[x] is how many of PSN x's
// first copies are lost.
func dropCopies(n map[psn.PSN]int) func([]byte, *rocev2.Meta) nictest.Action {
	return func(_ []byte, m *rocev2.Meta) nictest.Action {
		if request(m) && n[m.PSN] > 0 {
			n[m.PSN]--
			return nictest.Drop
		}
		return nictest.Pass
	}
}

// oneWrite moves one 64-packet WRITE from A to B through filters and
// returns what each PSN was sent as.
func oneWrite(t *testing.T, cfg fasr.Config, ab, ba func([]byte, *rocev2.Meta) nictest.Action) (sent, *fasr.Transport, *fasr.Transport) {
	t.Helper()
	return oneWriteOpts(t, nictest.Options{}, cfg, ab, ba)
}

// paced shapes both ports to 10 Mb/s, a token bucket shallower than a
// frame: packets reach the responder one per batch, and it acknowledges
// each. The steps are coarser to match.
var paced = nictest.Options{RateBps: 10e6, Step: 10_000, Delay: 20_000}

// pacedRTO outlasts a 64-packet WRITE at 10 Mb/s.
const pacedRTO = 1e9

func oneWriteOpts(t *testing.T, o nictest.Options, cfg fasr.Config, ab, ba func([]byte, *rocev2.Meta) nictest.Action) (sent, *fasr.Transport, *fasr.Transport) {
	t.Helper()
	p, a, b := newPair(t, o, cfg)
	s := sent{}
	p.AB.Filter = s.filter(ab)
	p.BA.Filter = ba
	offs := post(t, p, nic.OpWrite, []int{64 << 10})
	verify(t, p, nic.OpWrite, []int{64 << 10}, offs)
	for _, tr := range []*fasr.Transport{a, b} {
		if u, bl := tr.InUse(); u != 0 || bl != 0 {
			t.Errorf("%d units and %d blocks still in use", u, bl)
		}
	}
	t.Logf("requester %+v\nresponder %+v", a.Stats(), b.Stats())
	return s, a, b
}

// wantResent checks that exactly the PSNs psns were sent twice and no
// other more than once.
func wantResent(t *testing.T, s sent, psns ...psn.PSN) {
	t.Helper()
	got, extra := s.resent()
	slices.Sort(got)
	if !slices.Equal(got, psns) || extra != len(psns) {
		t.Errorf("resent %v (%d extra copies), want %v once each", got, extra, psns)
	}
}

// TestSlowPath loses several packets of one WRITE: lost-cnt passes 1,
// the responder records arrivals in bitmap blocks from the shared pool,
// and each lost PSN is resent once, from the SACK discontinuities.
func TestSlowPath(t *testing.T) {
	s, a, b := oneWrite(t, fasr.Config{}, dropFirst(10, 12, 14, 40), nil)
	wantResent(t, s, 10, 12, 14, 40)
	as, bs := a.Stats(), b.Stats()
	if bs.SlowEntries == 0 || bs.SlowOps == 0 || bs.PeakBlocks == 0 || bs.Recoveries != 1 {
		t.Errorf("responder: %d slow entries, %d slow ops, %d blocks, %d recoveries", bs.SlowEntries, bs.SlowOps, bs.PeakBlocks, bs.Recoveries)
	}
	if as.LostGaps != 4 || as.SACKRetransmits != 4 || as.SlowOps == 0 {
		t.Errorf("requester: %d lost gaps, %d SACK retransmits, %d slow ops", as.LostGaps, as.SACKRetransmits, as.SlowOps)
	}
	if r := bs.FastPathRatio(); r <= 0 || r >= 1 {
		t.Errorf("fast-path ratio %v: both paths ran", r)
	}
}

// TestPathSwitch loses PSN 10, then PSN 30 while the responder is on the
// fast path: lost-cnt 2 moves it to the slow path, with the 19 PSNs that
// arrived after RCV-NXT compressed into the compression-cnt rather than
// written bit by bit; the retransmission of 10 brings lost-cnt back to 1
// and the responder back to the fast path; the one of 30 ends the
// recovery. The requester follows the same path from the lost-cnts it
// hears.
func TestPathSwitch(t *testing.T) {
	var lost []uint8
	ba := func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) {
			lost = append(lost, sackOf(f, m).LostCnt())
		}
		return nictest.Pass
	}
	s, a, b := oneWriteOpts(t, paced, fasr.Config{RTO: pacedRTO}, dropFirst(10, 30), ba)
	wantResent(t, s, 10, 30)
	bs, as := b.Stats(), a.Stats()
	if bs.Recoveries != 1 || bs.FastEntries != 2 || bs.SlowEntries != 1 || bs.Compressions != 1 {
		t.Errorf("responder: %d recoveries, %d fast entries, %d slow entries, %d compressions: want 1, 2 (start, back), 1, 1",
			bs.Recoveries, bs.FastEntries, bs.SlowEntries, bs.Compressions)
	}
	if as.Compressions != 1 || as.LostGaps != 2 {
		t.Errorf("requester: %d compressions, %d lost gaps", as.Compressions, as.LostGaps)
	}
	// lost-cnt as the ACKs carried it: 1, 2, back to 1, then 0.
	var seq []uint8
	for _, l := range lost {
		if len(seq) == 0 || seq[len(seq)-1] != l {
			seq = append(seq, l)
		}
	}
	if !slices.Equal(seq, []uint8{1, 2, 1, 0}) {
		t.Errorf("lost-cnt went %v, want [1 2 1 0]", seq)
	}
	if bs.SACKs != 0 || as.FastOps == 0 || as.SlowOps == 0 {
		t.Errorf("requester: %d fast and %d slow operations", as.FastOps, as.SlowOps)
	}
}

// TestSACKLoss tells SACK loss from data loss by lost-cnt (§III-B 2).
// With PSN 10 lost and the ACKs carrying SACK PSNs 12 to 50 lost too,
// the requester sees sack-high jump from 11 past 50 with lost-cnt still
// 1: SACKs were lost, not data, and it resends nothing but 10. With PSNs
// 10 and 30 lost, the jump to 31 comes with lost-cnt 2, and 30 is
// resent.
func TestSACKLoss(t *testing.T) {
	t.Run("sack", func(t *testing.T) {
		droppedACKs := 0
		ba := func(f []byte, m *rocev2.Meta) nictest.Action {
			if ack(m) {
				if x := sackOf(f, m).PSN(); x.InWindow(12, 39) {
					droppedACKs++
					return nictest.Drop
				}
			}
			return nictest.Pass
		}
		s, a, _ := oneWriteOpts(t, paced, fasr.Config{RTO: pacedRTO}, dropFirst(10), ba)
		wantResent(t, s, 10)
		if as := a.Stats(); droppedACKs == 0 || as.SACKLossGaps == 0 || as.LostGaps != 1 {
			t.Errorf("%d ACKs dropped; %d gaps judged SACK loss, %d data loss", droppedACKs, as.SACKLossGaps, as.LostGaps)
		}
	})
	t.Run("data", func(t *testing.T) {
		s, a, _ := oneWriteOpts(t, paced, fasr.Config{RTO: pacedRTO}, dropFirst(10, 30), nil)
		wantResent(t, s, 10, 30)
		if as := a.Stats(); as.LostGaps != 2 {
			t.Errorf("%d gaps judged data loss, want 2", as.LostGaps)
		}
	})
}

// TestFNACK loses PSNs 10, 12 and 14 and then the retransmission of 10:
// the retransmissions of 12 and 14 reach the responder while RCV-NXT is
// still 10, so each is discarded and reported in an FNACK; the requester
// restarts from UNACK for the first one only — once per new ACK — and
// the data completes without a timeout.
func TestFNACK(t *testing.T) {
	var fnacks []psn.PSN
	ba := func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && sackOf(f, m).Flags()&rocev2.SACKFNACK != 0 {
			fnacks = append(fnacks, sackOf(f, m).PSN())
		}
		return nictest.Pass
	}
	s, a, b := oneWrite(t, fasr.Config{}, dropCopies(map[psn.PSN]int{10: 2, 12: 1, 14: 1}), ba)
	as, bs := a.Stats(), b.Stats()
	if len(fnacks) < 2 || fnacks[0] != 12 || bs.FNACKsSent != uint64(len(fnacks)) {
		t.Errorf("FNACKs for %v (responder counted %d), want 12 first and 14", fnacks, bs.FNACKsSent)
	}
	if as.FNACKsRecv != uint64(len(fnacks)) || as.FNACKRestarts != 1 {
		t.Errorf("requester: %d FNACKs, %d acted on: want %d and 1", as.FNACKsRecv, as.FNACKRestarts, len(fnacks))
	}
	if st := a.Stats(); st.Timeouts0+st.Timeouts1+st.TimeoutsN != 0 {
		t.Errorf("a timeout fired: %+v", st)
	}
	if s[10] != 3 || s[12] != 3 || s[14] < 2 {
		t.Errorf("PSN 10 sent %d times, 12 %d, 14 %d: want 3, 3 (the discarded one again), 2 or 3", s[10], s[12], s[14])
	}
}

// TestOverflow loses nine packets of one window: lost-cnt passes its 3
// bits, freezes at 7 and the ACKs flag the overflow; the requester then
// resends every gap without waiting for lost-cnt to grow, and RCV-NXT
// advances from the bitmap alone until the recovery ends.
func TestOverflow(t *testing.T) {
	flagged := 0
	maxLost := uint8(0)
	ba := func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) {
			x := sackOf(f, m)
			if x.Flags()&rocev2.SACKLostOverflow != 0 {
				flagged++
			}
			maxLost = max(maxLost, x.LostCnt())
		}
		return nictest.Pass
	}
	lost := []psn.PSN{10, 12, 14, 16, 18, 20, 22, 24, 26}
	s, a, b := oneWrite(t, fasr.Config{}, dropFirst(lost...), ba)
	wantResent(t, s, lost...)
	if bs := b.Stats(); bs.LostOverflows != 1 || flagged == 0 || maxLost != 7 {
		t.Errorf("%d overflows, %d ACKs flagged, highest lost-cnt %d: want 1, some, 7", bs.LostOverflows, flagged, maxLost)
	}
	if as := a.Stats(); as.LostGaps != uint64(len(lost)) {
		t.Errorf("requester resent %d gaps, want %d", as.LostGaps, len(lost))
	}
}

// TestTimeouts covers the expiry by lost-cnt (§III-B 2): 0 — nothing
// selective was heard, everything from UNACK goes again; 1 — only UNACK;
// more — UNACK and the bitmap's zeros up to sack-high.
func TestTimeouts(t *testing.T) {
	t.Run("lost-cnt 0", func(t *testing.T) {
		drop := map[psn.PSN]int{}
		for x := psn.PSN(40); x < 64; x++ {
			drop[x] = 1
		}
		s, a, _ := oneWrite(t, fasr.Config{}, dropCopies(drop), nil)
		want := make([]psn.PSN, 0, 24)
		for x := psn.PSN(40); x < 64; x++ {
			want = append(want, x)
		}
		wantResent(t, s, want...)
		if st := a.Stats(); st.Timeouts0 != 1 || st.Timeouts1+st.TimeoutsN != 0 || st.RestartResends != 24 {
			t.Errorf("timeouts %d/%d/%d, %d resent: want 1/0/0, 24", st.Timeouts0, st.Timeouts1, st.TimeoutsN, st.RestartResends)
		}
	})
	t.Run("lost-cnt 1", func(t *testing.T) {
		s, a, _ := oneWrite(t, fasr.Config{}, dropCopies(map[psn.PSN]int{10: 2}), nil)
		if got, extra := s.resent(); len(got) != 1 || s[10] != 3 || extra != 2 {
			t.Errorf("resent %v (%d extra): want PSN 10 twice", got, extra)
		}
		if st := a.Stats(); st.Timeouts1 != 1 || st.Timeouts0+st.TimeoutsN != 0 || st.RestartResends != 1 {
			t.Errorf("timeouts %d/%d/%d, %d resent: want 0/1/0, 1", st.Timeouts0, st.Timeouts1, st.TimeoutsN, st.RestartResends)
		}
	})
	t.Run("lost-cnt 2", func(t *testing.T) {
		s, a, _ := oneWrite(t, fasr.Config{}, dropCopies(map[psn.PSN]int{10: 2, 20: 2}), nil)
		if got, extra := s.resent(); len(got) != 2 || s[10] != 3 || s[20] != 3 || extra != 4 {
			t.Errorf("resent %v (%d extra): want PSNs 10 and 20 twice each", got, extra)
		}
		if st := a.Stats(); st.TimeoutsN != 1 || st.Timeouts0+st.Timeouts1 != 0 || st.RestartResends != 2 {
			t.Errorf("timeouts %d/%d/%d, %d resent: want 0/0/1, 2", st.Timeouts0, st.Timeouts1, st.TimeoutsN, st.RestartResends)
		}
	})
}

// TestBlocksExhausted runs with no bitmap blocks at all: a single loss
// still recovers on the fast path, but a second loss in the same
// recovery needs the bitmap, so the responder falls back to Go-Back-N —
// keeping what it recorded — and NAKs; the requester resends from
// RCV-NXT, skipping what it knows arrived. The next message's single
// loss is selective again.
func TestBlocksExhausted(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, fasr.Config{Blocks: -1})
	_ = a
	s := sent{}
	p.AB.Filter = s.filter(dropFirst(10, 30, 64+20))
	sz := []int{64 << 10, 64 << 10}
	offs := post(t, p, nic.OpWrite, sz[:1])
	run(t, p, 1)
	first := map[psn.PSN]int{}
	for x, n := range s {
		first[x] = n
	}
	nictest.Fill(p.A.Buf[offs[0]+sz[0]:offs[0]+2*sz[0]], 1)
	if err := p.A.Post(nic.OpWrite, 0, 1, sz[0], sz[0], sz[1]); err != nil {
		t.Fatal(err)
	}
	verify(t, p, nic.OpWrite, sz, []int{0, sz[0]})
	bs, as := b.Stats(), a.Stats()
	t.Logf("requester %+v\nresponder %+v", as, bs)
	if bs.GBNFallbacks != 1 || bs.BlocksExhausted == 0 || as.GBNRewinds != 1 {
		t.Errorf("responder: %d fallbacks, %d block shortages; requester %d rewinds: want 1, some, 1",
			bs.GBNFallbacks, bs.BlocksExhausted, as.GBNRewinds)
	}
	// Go-Back-N from 10 skipped 11–29, which the requester knew arrived,
	// and resent 10 and 30–63.
	if first[10] != 2 || first[11] != 1 || first[29] != 1 || first[30] < 2 || first[63] != 2 {
		t.Errorf("first message: PSN 10 sent %d times, 11 %d, 29 %d, 30 %d, 63 %d", first[10], first[11], first[29], first[30], first[63])
	}
	if bs.Recoveries != 2 || s[84] != 2 || s[85] != 1 {
		t.Errorf("second message: %d recoveries in all, PSN 84 sent %d times, 85 %d: want 2, 2, 1 (selective again)",
			bs.Recoveries, s[84], s[85])
	}
}

// TestUnitsExhausted shares one SR state unit among four QPs that lose a
// packet each at the same time: one recovers selectively, the others go
// Go-Back-N; once the unit is free again, the next losses are selective.
func TestUnitsExhausted(t *testing.T) {
	const qps, size = 4, 32 << 10
	p, a, b := newPair(t, nictest.Options{QPs: qps, MRSize: 2 * qps * size}, fasr.Config{Units: 1, Blocks: 8})
	// Each QP's PSNs start at k×1000: lose the 5th packet of each QP's
	// first message, and the 5th of QP 0's second.
	p.AB.Filter = dropFirst(5, 1005, 2005, 3005, 37)
	for round := 0; round < 2; round++ {
		for k := 0; k < qps; k++ {
			off := (round*qps + k) * size
			nictest.Fill(p.A.Buf[off:off+size], uint64(off))
			if err := p.A.Post(nic.OpWrite, k, uint64(off), off, off, size); err != nil {
				t.Fatal(err)
			}
		}
		run(t, p, (round+1)*qps)
		if round == 0 {
			if bs := b.Stats(); bs.UnitsExhausted == 0 || bs.GBNFallbacks == 0 {
				t.Errorf("round 0: %d unit shortages, %d fallbacks", bs.UnitsExhausted, bs.GBNFallbacks)
			}
		}
	}
	wantOK(t, p.A.CQ)
	for i := 0; i < 2*qps; i++ {
		if err := nictest.Check(p.B.Buf[i*size:(i+1)*size], uint64(i*size)); err != nil {
			t.Errorf("message at %d: %v", i*size, err)
		}
	}
	bs := b.Stats()
	t.Logf("requester %+v\nresponder %+v", a.Stats(), bs)
	if bs.PeakUnits != 1 || bs.Recoveries < 2 {
		t.Errorf("%d units at once, %d selective recoveries", bs.PeakUnits, bs.Recoveries)
	}
	if u, bl := b.InUse(); u != 0 || bl != 0 {
		t.Errorf("%d units and %d blocks still in use", u, bl)
	}
}

// TestSend loses packets of a stream of SENDs: each SEND packet carries
// its SSN and index (the OOO layout), so the responder places the ones
// after a loss at once, the lost ones alone are resent, and every
// receive completes once, in order, when RCV-NXT passes its last packet.
func TestSend(t *testing.T) {
	p, _, b := newPair(t, nictest.Options{}, fasr.Config{})
	s := sent{}
	p.AB.Filter = s.filter(dropFirst(3, 10, 11, 40, 44))
	sz := []int{8 << 10, 8 << 10, 8 << 10, 8 << 10, 100, 8 << 10, 16 << 10, 0, 1}
	offs := post(t, p, nic.OpSend, sz)
	verify(t, p, nic.OpSend, sz, offs)
	wantResent(t, s, 3, 10, 11, 40, 44)
	if bs := b.Stats(); bs.GBNFallbacks != 0 || bs.Recoveries == 0 {
		t.Errorf("responder %+v", bs)
	}
}

// TestMixed interleaves WRITEs and SENDs with losses in both: WRITE
// packets after a loss are placed out of order, SENDs wait.
func TestMixed(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{}, fasr.Config{})
	p.AB.Filter = dropFirst(3, 9, 17, 25, 26, 40)
	ops := []nic.Op{nic.OpWrite, nic.OpSend, nic.OpWrite, nic.OpWrite, nic.OpSend, nic.OpWrite, nic.OpSend}
	sz := []int{8 << 10, 4 << 10, 1, 12 << 10, 3000, 9 << 10, 0}
	off, recvs := 0, 0
	offs := make([]int, len(sz))
	for i, n := range sz {
		offs[i] = off
		nictest.Fill(p.A.Buf[off:off+n], uint64(i))
		if ops[i] == nic.OpSend {
			if err := p.B.Post(nic.OpRecv, 0, uint64(i), off, 0, n); err != nil {
				t.Fatal(err)
			}
			recvs++
		}
		if err := p.A.Post(ops[i], 0, uint64(i), off, off, n); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	run(t, p, len(sz))
	p.Run(func() bool { return p.B.Done() == recvs }, 1e8)
	wantOK(t, p.A.CQ)
	wantOK(t, p.B.CQ)
	for i, n := range sz {
		if err := nictest.Check(p.B.Buf[offs[i]:offs[i]+n], uint64(i)); err != nil {
			t.Errorf("%s %d: %v", ops[i], i, err)
		}
	}
	k := 0
	for i := range sz {
		if ops[i] == nic.OpSend {
			if c := p.B.CQ[k]; c.ID != uint64(i) || c.Len != sz[i] {
				t.Errorf("receive %d: %+v, want message %d of %d bytes", k, c, i, sz[i])
			}
			k++
		}
	}
}

// TestRead reads through losses among WRITEs: a READ executes in order
// at the responder — one that arrives ahead of RCV-NXT makes the
// recovery go Go-Back-N — and a gap in the responses makes the requester
// re-issue the READ from the missing one, as gbn does.
func TestRead(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, fasr.Config{})
	const n = 64 << 10
	nictest.Fill(p.B.Buf[:n], 7)
	nictest.Fill(p.A.Buf[n:3*n], 8)
	var lostResp int
	p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsResponse() && m.Opcode != rocev2.RCAck && (m.PSN == 70 || m.PSN == 200) && lostResp < 2 {
			lostResp++
			return nictest.Drop
		}
		return nictest.Pass
	}
	// A WRITE of 64 packets (PSNs 0–63), with 10 lost, so that the READ
	// request after it (64, for PSNs 64–127) arrives ahead of RCV-NXT;
	// a WRITE (128–191); a READ (192), with a response lost each.
	p.AB.Filter = dropFirst(10)
	posts := []struct {
		op       nic.Op
		loff, ro int
	}{{nic.OpWrite, n, n}, {nic.OpRead, 0, 0}, {nic.OpWrite, 2 * n, 2 * n}, {nic.OpRead, 3 * n, 0}}
	for i, x := range posts {
		if err := p.A.Post(x.op, 0, uint64(i), x.loff, x.ro, n); err != nil {
			t.Fatal(err)
		}
	}
	run(t, p, len(posts))
	wantOK(t, p.A.CQ)
	for i, c := range p.A.CQ {
		if c.ID != uint64(i) || c.Op != posts[i].op {
			t.Errorf("completion %d: %+v", i, c)
		}
	}
	for _, b := range [][]byte{p.A.Buf[:n], p.A.Buf[3*n : 4*n]} {
		if err := nictest.Check(b, 7); err != nil {
			t.Errorf("READ: %v", err)
		}
	}
	if err := nictest.Check(p.B.Buf[n:3*n], 8); err != nil {
		t.Errorf("WRITE: %v", err)
	}
	as, bs := a.Stats(), b.Stats()
	t.Logf("requester %+v\nresponder %+v", as, bs)
	if bs.ReadFallbacks != 1 || lostResp != 2 || p.A.E.LiveStats().ReadRetries == 0 {
		t.Errorf("%d early READs, %d responses lost, %d READ re-issues", bs.ReadFallbacks, lostResp, p.A.E.LiveStats().ReadRetries)
	}
}

// TestRemoteErrors covers the fatal NAKs: a WRITE outside the peer's
// region and a SEND without a posted receive; the failed QP returns its
// SR state to the pool.
func TestRemoteErrors(t *testing.T) {
	t.Run("range", func(t *testing.T) {
		p, _, b := newPair(t, nictest.Options{}, fasr.Config{})
		p.AB.Filter = dropFirst(2)
		if err := p.A.Post(nic.OpWrite, 0, 1, 0, len(p.B.Buf)-(10<<10), 16<<10); err != nil {
			t.Fatal(err)
		}
		run(t, p, 1)
		if c := p.A.CQ[0]; c.Status != nic.StatusRemoteAccess {
			t.Fatalf("completion %+v, want remote access error", c)
		}
		if u, bl := b.InUse(); u != 0 || bl != 0 {
			t.Errorf("the failed QP holds %d units, %d blocks", u, bl)
		}
	})
	t.Run("rnr", func(t *testing.T) {
		p, _, _ := newPair(t, nictest.Options{}, fasr.Config{})
		if err := p.A.Post(nic.OpSend, 0, 1, 0, 0, 100); err != nil {
			t.Fatal(err)
		}
		run(t, p, 1)
		if c := p.A.CQ[0]; c.Status != nic.StatusRNR {
			t.Fatalf("completion %+v, want RNR", c)
		}
	})
}

// TestRetryExceeded cuts the link: after RetryLimit expiries the WRITE
// fails and the QP returns its unit.
func TestRetryExceeded(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, fasr.Config{RetryLimit: 3, MaxRTO: rto})
	lose := false
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if request(m) && (m.PSN == 5 || lose) {
			lose = true
			return nictest.Drop
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 16<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	if c := p.A.CQ[0]; c.Status != nic.StatusRetryExceeded {
		t.Fatalf("completion %+v, want retry exceeded", c)
	}
	if u, bl := a.InUse(); u != 0 || bl != 0 {
		t.Errorf("the failed QP holds %d units, %d blocks", u, bl)
	}
}

// TestPSNWrap runs a lossy WRITE across the 24-bit PSN wrap.
func TestPSNWrap(t *testing.T) {
	start := psn.PSN(psn.Mask - 20)
	p, _, _ := newPair(t, nictest.Options{PSN: [2]psn.PSN{start, start}}, fasr.Config{})
	p.AB.Filter = dropFirst(start.Add(15), start.Add(21), start.Add(22), start.Add(40))
	offs := post(t, p, nic.OpWrite, []int{64 << 10, 3000})
	verify(t, p, nic.OpWrite, []int{64 << 10, 3000}, offs)
}

// TestRefusals: a NAK — RNR, remote access, invalid request, a SACK —
// for a request placed ahead of a lost one acknowledges only the
// cumulative ACK it carries, not the PSNs before it; with no SR state
// unit the loss is reported by a Go-Back-N NAK.
func TestRefusals(t *testing.T) {
	nictest.Refusals(t, nictest.Options{Transport: func() nic.Transport { return nictest.Must(fasr.New(fasr.Config{})) }})
	t.Run("gbn", func(t *testing.T) {
		nictest.Refusals(t, nictest.Options{Transport: func() nic.Transport { return nictest.Must(fasr.New(fasr.Config{Units: -1})) }})
	})
}

// TestRefusedNotRecorded: a SEND that finds no receive while the
// responder is on the slow path is refused, not placed, so it must not
// be recorded as arrived. PSNs 0 and 1 (a WRITE's first two packets) are
// lost, 2 arrives, the SEND at 3 is refused with an RNR NAK and the
// WRITE at 4 arrives; when 0 and 1 are resent RCV-NXT stops at 3. A
// bitmap that recorded 3 moved it to 5, acknowledging the refused SEND.
func TestRefusedNotRecorded(t *testing.T) {
	p, _, b := newPair(t, nictest.Options{}, fasr.Config{})
	p.AB.Filter = dropFirst(0, 1)
	var cum psn.PSN
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && rocev2.AETH(f[m.ExtOff(rocev2.ExtAETH):]).Syndrome().IsACK() && cum.Less(m.PSN) {
			cum = m.PSN
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:5<<10], 1)
	for i, w := range []struct {
		op     nic.Op
		off, n int
	}{{nic.OpWrite, 0, 3 << 10}, {nic.OpSend, 3 << 10, 1 << 10}, {nic.OpWrite, 4 << 10, 1 << 10}} {
		if err := p.A.Post(w.op, 0, uint64(i), w.off, w.off, w.n); err != nil {
			t.Fatal(err)
		}
	}
	run(t, p, 3)
	want := []nic.Status{nic.StatusOK, nic.StatusRNR, nic.StatusFlushed}
	for i, c := range p.A.CQ {
		if c.Status != want[i] {
			t.Errorf("completion %d: %+v, want %v", i, c, want[i])
		}
	}
	if err := nictest.Check(p.B.Buf[:3<<10], 1); err != nil {
		t.Errorf("WRITE 0: %v", err)
	}
	if cum != 2 {
		t.Errorf("B acknowledged up to PSN %d, want 2: the refused SEND is PSN 3; B %+v", cum, b.Stats())
	}
}
