package perf

import (
	"bytes"
	"fmt"
)

// Message payloads are windows of one pseudo-random table: message i
// carries table bytes from offset(i) on, wrapping. Filling and checking
// are then copy and bytes.Equal, at memory speed, so verification costs
// the sender and the checker no more than a memcpy of the data. The
// table's length is prime, so a chunk shifted by any multiple of an MTU
// never lines up with the pattern it replaced; distinct messages start
// at distinct offsets except for a 1-in-65521 coincidence, which a stale
// message would need to go unnoticed.
const patLen = 65521

var patTable = func() []byte {
	b := make([]byte, patLen)
	x := uint64(0x726f636570657266) // "roceperf"
	for i := range b {
		x = splitmix(x)
		b[i] = byte(x >> 56)
	}
	return b
}()

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func patOffset(msg uint64) int { return int(splitmix(msg) % patLen) }

// fill writes message msg's pattern into b.
func fill(b []byte, msg uint64) {
	o := patOffset(msg)
	for len(b) > 0 {
		n := copy(b, patTable[o:])
		b, o = b[n:], 0
	}
}

// check returns nil if b holds message msg's pattern, or an error that
// names the first byte that does not.
func check(b []byte, msg uint64) error {
	o, off := patOffset(msg), 0
	for off < len(b) {
		want := patTable[o:min(patLen, o+len(b)-off)]
		got := b[off : off+len(want)]
		if !bytes.Equal(got, want) {
			for k := range got {
				if got[k] != want[k] {
					return fmt.Errorf("message %d: byte %d of %d is %#02x, want %#02x", msg, off+k, len(b), got[k], want[k])
				}
			}
		}
		off += len(want)
		o = 0
	}
	return nil
}
