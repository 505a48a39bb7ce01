package nic

import (
	"testing"

	"rocetor/rocev2"
)

// TestINTNoRoom: an INT request tail that does not fit after the packet
// in the frame buffer is left out and counted; one that fits is written
// and not counted. (nic's own configuration always leaves room for a
// tail of rocev2.INTMaxHops records; frame memory smaller than its
// FrameSize — the simulator's slots — may not.)
func TestINTNoRoom(t *testing.T) {
	need := rocev2.INTLen(rocev2.INTDefaultMax)
	for _, tc := range []struct {
		room, n, want int
		noRoom        uint64
	}{{1200, 1100, 1100 + need, 0}, {1152, 1100, 1100, 1}} {
		e := &Endpoint{intReq: rocev2.INTDefaultMax}
		if got := e.tail(make([]byte, tc.room), tc.n); got != tc.want || e.st.INTNoRoom != tc.noRoom {
			t.Errorf("%d bytes after a %d-byte packet: length %d, %d left out; want %d, %d",
				tc.room-tc.n, tc.n, got, e.st.INTNoRoom, tc.want, tc.noRoom)
		}
	}
}
