package dataplane

import (
	"testing"
	"unsafe"
)

// TestWorkerSize: a worker carries one batch of packets, which receive,
// the stages and transmit share, not one for each: a simulator builds a
// worker for each of thousands of nodes (tor/fabric), and a second batch
// was 6.6 KB of each.
func TestWorkerSize(t *testing.T) {
	if n, b := unsafe.Sizeof(Worker{}), unsafe.Sizeof(Batch{}); n > 2*b {
		t.Fatalf("a worker is %d bytes, more than two batches of %d", n, b)
	}
}
