package nic

import (
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// INTSampler is an optional interface of a CC whose congestion signal is
// the in-band network telemetry (INT) switches stamp into the requests
// that ask for it, as HPCC's (nic/cc.HPCC; Li et al., SIGCOMM 2019):
// the endpoint asks it, for every request packet it builds, how many hop
// records to reserve in an INT request tail (rocev2/int.go), and shows it
// every response whose INT echo tail returns the records. NewEndpoint
// asserts it once, so a CC without it costs nothing on the sending side.
//
// Whatever its CC, every endpoint echoes INT: a request that arrives
// with a request tail has its records kept on its QP, and the next ACK
// or NAK the QP sends (a coalesced ACK: the records of the last request
// it covers) carries them back as an echo tail, once. Read responses
// carry no INT, nor do requests a READ's responder answers with data.
type INTSampler interface {
	// INTHops returns the hop records the request packet q is about to
	// build should reserve, 0 for none (at most rocev2.INTMaxHops). It
	// must not change state: the packet may yet not be sent.
	INTHops(q *QP) int
	// INT is called for a response to q that echoes INT, after the
	// transport handled it; a is q's cumulative acknowledgement then
	// (every PSN up to and including a is acknowledged). t aliases the
	// frame and is valid only during the call.
	INT(q *QP, now int64, a psn.PSN, t rocev2.INT)
}

// intEcho is the records each QP's responder keeps to echo: a slot of
// rocev2.INTLen(rocev2.INTMaxHops) bytes per QP, made when the first INT
// request arrives (an endpoint nobody asks for INT keeps none), and the
// length of what each slot holds (0: nothing to echo).
type intEcho struct {
	buf []byte
	n   []uint8
}

// intSlot is the bytes of one QP's echo slot.
var intSlot = rocev2.INTLen(rocev2.INTMaxHops)

// keepINT keeps the INT request tail of request frame f of q, if it
// carries one, for q's next ACK.
func (e *Endpoint) keepINT(q *QP, f []byte, m *rocev2.Meta) {
	t, _ := rocev2.FindINT(f, int(m.End))
	if t == nil || t.Echo() {
		return
	}
	if e.echo.buf == nil {
		e.echo = intEcho{buf: make([]byte, len(e.qps)*intSlot), n: make([]uint8, len(e.qps))}
	}
	i := q.Index()
	e.echo.n[i] = uint8(copy(e.echo.buf[i*intSlot:(i+1)*intSlot], t))
}

// readINT hands the INT echo tail of response frame f of q, if it
// carries one, to the CC.
func (e *Endpoint) readINT(c *Ctx, q *QP, f []byte, m *rocev2.Meta) {
	if t, _ := rocev2.FindINT(f, int(m.End)); t != nil && t.Echo() {
		e.ints.INT(q, c.Now, q.acked, t)
	}
}

// tail writes after a frame's n built bytes in room the INT tail the
// frame being emitted carries — a request tail of e.intReq records, or
// the echo of QP e.intAck−1's kept records — and returns the frame's
// new length. A tail that does not fit the frame buffer is left out and
// counted (Stats.INTNoRoom): the frame goes without telemetry, which
// changes what the sender's congestion control sees (HPCC), so a frame
// memory too small for MTU plus the tail shows in the counters.
func (e *Endpoint) tail(room []byte, n int) int {
	t := 0
	switch {
	case e.intReq > 0:
		t = rocev2.PutINT(room[n:], e.intReq)
	case e.intAck > 0 && e.echo.n != nil:
		i := e.intAck - 1
		k := int(e.echo.n[i])
		if k == 0 {
			return n
		}
		t = rocev2.PutEcho(room[n:], rocev2.INT(e.echo.buf[i*intSlot:i*intSlot+k]))
		e.echo.n[i] = 0
	default:
		return n
	}
	if t == 0 {
		e.st.INTNoRoom++
	}
	return n + t
}
