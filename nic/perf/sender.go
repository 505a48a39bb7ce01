package perf

import (
	"fmt"
	"time"

	"rocetor/nic"
)

// sender moves one direction of a bandwidth run: up to depth messages in
// flight per QP, the next posted as each completes, until count have
// completed — or, with a deadline, until it passes and then only the
// messages below the highest posted, so that the run is messages 0 to
// count-1, which the receiver's verification counts on. The client's
// post loop drives one; a server answering -b drives another for the
// way back. It belongs to the goroutine that polls the session.
type sender struct {
	op                nic.Op
	size, qps, depth  int
	count             int       // messages; 1<<62 until a deadline passes
	deadline          time.Time // zero: count is final
	s                 session
	qpns              []uint32
	mr                nic.MR // local region; message k of QP q uses byte (q*depth + k%depth)*size of buf
	bufVA             uint64 // buf's address in mr
	buf               []byte
	peer              nic.MR
	slots             int    // message i goes to, or comes from, peer slot i mod slots
	idBase            uint64 // or'ed into every work request's ID
	postAt            []int64
	posts, dones, lat []int64
	next, done        []int // per QP: messages k posted, completed (message k*qps+q)
	first, last       int64
	top               int // the highest message posted
	// READ: what the responses brought back, checked as they complete.
	verified     int64
	corrupt      int
	firstCorrupt string
}

func newSender(op nic.Op, size, qps, depth, count int, duration time.Duration, s session, qpns []uint32,
	mr nic.MR, bufVA uint64, buf []byte, peer nic.MR, slots int, idBase uint64) *sender {
	sd := &sender{op: op, size: size, qps: qps, depth: depth, count: count, s: s, qpns: qpns, mr: mr, bufVA: bufVA,
		buf: buf, peer: peer, slots: slots, idBase: idBase, next: make([]int, qps), done: make([]int, qps),
		first: -1, top: -1}
	if duration > 0 {
		sd.count, sd.deadline = 1<<62, time.Now().Add(duration)
	}
	n := min(sd.count, 1<<20)
	sd.postAt = make([]int64, n)
	sd.posts, sd.dones, sd.lat = make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	return sd
}

// start posts the first messages of every QP.
func (sd *sender) start() error {
	for q := range sd.qps {
		if err := sd.postQP(q); err != nil {
			return err
		}
	}
	return nil
}

// postQP posts QP q's next messages while its window and the count allow.
func (sd *sender) postQP(q int) error {
	for {
		k := sd.next[q]
		i := q + k*sd.qps
		if i >= sd.count || k-sd.done[q] >= sd.depth {
			return nil
		}
		for i >= len(sd.postAt) {
			sd.postAt = append(sd.postAt, make([]int64, len(sd.postAt)+1)...)
		}
		sd.top = max(sd.top, i)
		off := (q*sd.depth + k%sd.depth) * sd.size
		wr := nic.WR{ID: sd.idBase | uint64(i), Op: sd.op, QP: sd.qpns[q], LKey: sd.mr.Key, LocalVA: sd.bufVA + uint64(off), Len: sd.size}
		switch sd.op {
		case nic.OpWrite, nic.OpRead:
			wr.RKey, wr.RemoteVA = sd.peer.Key, sd.peer.VA+uint64(i%sd.slots)*uint64(sd.size)
		}
		if sd.op != nic.OpRead {
			fill(sd.buf[off:off+sd.size], uint64(i))
		}
		sd.postAt[i] = sd.s.Now()
		sd.posts = append(sd.posts, sd.postAt[i])
		if sd.first < 0 {
			sd.first = sd.postAt[i]
		}
		if err := sd.s.Post(wr); err != nil {
			return fmt.Errorf("post message %d on QP %#x: %w", i, sd.qpns[q], err)
		}
		sd.next[q]++
	}
}

// tick ends the posting of a timed run once its deadline passed.
func (sd *sender) tick(now time.Time) {
	if !sd.deadline.IsZero() && sd.count > sd.top+1 && !now.Before(sd.deadline) {
		sd.count = sd.top + 1 // post no more beyond; fill the gaps below
	}
}

// complete takes the completion of one of the sender's messages, checks
// a READ's data, and posts the next messages of its QP.
func (sd *sender) complete(c nic.Completion) error {
	i := int(c.ID & idMask)
	q := i % sd.qps
	sd.done[q]++
	if c.Status != nic.StatusOK {
		return fmt.Errorf("message %d on QP %#x completed with %v after %d messages", i, c.QP, c.Status, len(sd.lat))
	}
	sd.lat = append(sd.lat, c.Latency)
	sd.dones = append(sd.dones, sd.postAt[i]+c.Latency)
	sd.last = max(sd.last, sd.postAt[i]+c.Latency)
	if sd.op == nic.OpRead {
		off := (q*sd.depth + (i/sd.qps)%sd.depth) * sd.size
		sd.verified += int64(sd.size)
		if err := check(sd.buf[off:off+sd.size], uint64(i%sd.slots)); err != nil {
			sd.corrupt++
			if sd.firstCorrupt == "" {
				sd.firstCorrupt = err.Error()
			}
		}
	}
	return sd.postQP(q)
}

// finished reports whether every message completed.
func (sd *sender) finished() bool { return len(sd.lat) >= sd.count }

// outstanding is how many messages are in flight.
func (sd *sender) outstanding() int { return sum(sd.next) - len(sd.lat) }

// ran is the count of a timed run once it finished: messages 0 to ran-1.
func (sd *sender) ran() int { return min(sd.count, sd.top+1) }
