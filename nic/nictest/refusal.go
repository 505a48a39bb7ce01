package nictest

import (
	"testing"

	"rocetor/nic"
	"rocetor/rocev2"
)

// Refusals checks that a NAK does not acknowledge what never arrived,
// for a transport that places out of order (o.Transport): A's first
// packet, a one-packet WRITE, is lost once; the request after it meets
// a refusal at B — no receive posted (RNR), an address outside B's
// region (remote access), a SEND longer than its receive (invalid
// request) — or nothing (seq: only the loss, which the transport's own
// NACK, SACK or sequence NAK reports). The WRITE completes OK only with
// its bytes in B's region: after an RNR NAK it is resent and completes
// OK, then the SEND fails with StatusRNR; after a fatal NAK, which put
// B's QP in the error state, it completes StatusFlushed and the refused
// request with the NAK's status (or, if the transport dropped the
// refused request as out of order and took the WRITE first, OK).
func Refusals(t *testing.T, o Options) {
	const n = 1024
	cases := []struct {
		name string
		want [2]nic.Status
	}{
		{"seq", [2]nic.Status{nic.StatusOK, nic.StatusOK}},
		{"rnr", [2]nic.Status{nic.StatusOK, nic.StatusRNR}},
		{"access", [2]nic.Status{nic.StatusFlushed, nic.StatusRemoteAccess}},
		{"invalid", [2]nic.Status{nic.StatusFlushed, nic.StatusRemoteInvalid}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := New(t, o)
			first := p.A.QPs[0].PSN
			lost := false
			p.AB.Filter = func(_ []byte, m *rocev2.Meta) Action {
				if m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() && m.PSN == first && !lost {
					lost = true
					return Drop
				}
				return Pass
			}
			Fill(p.A.Buf[:2*n], 7)
			if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, n); err != nil {
				t.Fatal(err)
			}
			var err error
			switch tc.name {
			case "seq":
				err = p.A.Post(nic.OpWrite, 0, 2, n, n, n)
			case "rnr":
				err = p.A.Post(nic.OpSend, 0, 2, n, 0, n)
			case "access":
				err = p.A.Post(nic.OpWrite, 0, 2, n, len(p.B.Buf), n)
			case "invalid":
				if err = p.B.Post(nic.OpRecv, 0, 9, n, 0, n/2); err == nil {
					err = p.A.Post(nic.OpSend, 0, 2, n, 0, n)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			p.MustComplete(t, 2, 2e9)
			if !lost {
				t.Fatal("the first packet was never sent")
			}
			got := [2]nic.Status{p.A.CQ[0].Status, p.A.CQ[1].Status}
			if got[0] == nic.StatusOK && tc.want[0] == nic.StatusFlushed {
				tc.want[0] = got[0] // the transport took the lost WRITE before the refusal (Go-Back-N)
			}
			if got != tc.want || p.A.CQ[0].ID != 1 {
				t.Errorf("completions %+v, want statuses %v", p.A.CQ, tc.want)
			}
			if p.A.CQ[0].Status == nic.StatusOK {
				if err := Check(p.B.Buf[:n], 7); err != nil {
					t.Errorf("the WRITE completed OK but its bytes are not at B: %v", err)
				}
			}
		})
	}
}

// Must returns t, or panics with err: for transports built in an
// Options.Transport function, which has no testing.TB.
func Must[T any](t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}
