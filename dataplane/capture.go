package dataplane

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// CapturePoint says where a Capture copies frames.
type CapturePoint uint8

// Capture points.
const (
	CaptureRx    CapturePoint = iota // frames received on the port, before classification
	CaptureTx                        // frames handed to the port for transmission
	CaptureStage                     // frames a stage forwards or emits toward the port
	// CaptureRxTx is CaptureRx and CaptureTx at once, in the order the
	// worker handles them: what an endpoint on the port receives and
	// sends, as tcpdump on the interface would show it if AF_XDP did
	// not bypass the kernel's taps (roceperf --pcap).
	CaptureRxTx
)

// ParseCapturePoint parses "rx", "tx" or "stage".
func ParseCapturePoint(s string) (CapturePoint, error) {
	switch s {
	case "rx":
		return CaptureRx, nil
	case "tx":
		return CaptureTx, nil
	case "stage":
		return CaptureStage, nil
	case "rxtx":
		return CaptureRxTx, nil
	}
	return 0, fmt.Errorf("capture point %q: want rx, tx, rxtx or stage", s)
}

// Capture limits: a capture holds at most MaxCaptureBytes of frame copies
// per worker, whatever the count and snap length asked for.
const (
	MaxCaptureFrames = 1 << 20
	MaxCaptureBytes  = 64 << 20
)

// ErrCapture wraps every invalid capture request.
var ErrCapture = errors.New("dataplane: capture")

// Capture copies the frames one worker sees at one point of one port
// into fixed slots, for a packet capture taken while the worker forwards:
// the control plane makes it (NewCapture), arms it on the worker
// (Worker.Capture), waits for Full or its own deadline, disarms it and
// reads Frames. The worker writes slot n and only then publishes n+1
// (Count), so a reader never sees a slot being written; once all slots
// are taken the worker copies nothing more. Nothing is allocated after
// NewCapture, and a worker with no capture armed pays one atomic load
// per loop.
type Capture struct {
	Port  int
	Point CapturePoint
	Stage int // the stage index, for CaptureStage
	snap  int
	buf   []byte
	recs  []CaptureRecord
	n     atomic.Int64
	// missed counts the frames that found every slot taken.
	missed atomic.Uint64
}

// CaptureRecord is one captured frame: Data is its first snap-length
// bytes, OrigLen its length on the wire.
type CaptureRecord struct {
	Time    time.Time
	OrigLen int
	Data    []byte
}

// NewCapture makes a capture of up to count frames of at most snap bytes
// each; count × snap must stay within MaxCaptureBytes.
func NewCapture(port int, point CapturePoint, stage, count, snap int) (*Capture, error) {
	if err := CheckCapture(port, point, stage, count, snap); err != nil {
		return nil, err
	}
	return &Capture{Port: port, Point: point, Stage: stage, snap: snap, buf: make([]byte, count*snap),
		recs: make([]CaptureRecord, count)}, nil
}

// CheckCapture says whether NewCapture would accept its arguments,
// without allocating.
func CheckCapture(port int, point CapturePoint, stage, count, snap int) error {
	if count < 1 || count > MaxCaptureFrames || snap < 14 || snap > 65535 {
		return fmt.Errorf("%w: %d frames of %d bytes: want 1 to %d frames of 14 to 65535 bytes", ErrCapture, count, snap, MaxCaptureFrames)
	}
	if count*snap > MaxCaptureBytes {
		return fmt.Errorf("%w: %d frames of %d bytes is over the %d MiB budget", ErrCapture, count, snap, MaxCaptureBytes>>20)
	}
	if port < 0 || port >= NoPort || point > CaptureRxTx || stage < 0 {
		return fmt.Errorf("%w: port %d, point %d, stage %d", ErrCapture, port, point, stage)
	}
	return nil
}

// Count returns the frames captured so far; safe from any goroutine.
func (c *Capture) Count() int { return int(c.n.Load()) }

// Full reports whether every slot is taken.
func (c *Capture) Full() bool { return c.Count() == len(c.recs) }

// Missed returns how many frames came after every slot was taken and
// were not copied; safe from any goroutine.
func (c *Capture) Missed() uint64 { return c.missed.Load() }

// Frames returns the frames captured so far, oldest first. The records
// alias the capture's memory.
func (c *Capture) Frames() []CaptureRecord { return c.recs[:c.Count()] }

// add copies frame f; called only by the worker that has c armed.
func (c *Capture) add(f []byte) {
	i := int(c.n.Load())
	if i == len(c.recs) {
		c.missed.Add(1)
		return
	}
	d := c.buf[i*c.snap : i*c.snap+min(len(f), c.snap)]
	copy(d, f)
	c.recs[i] = CaptureRecord{Time: time.Now(), OrigLen: len(f), Data: d}
	c.n.Store(int64(i + 1))
}

// Capture arms c on the worker, or disarms with nil; safe from any
// goroutine. It returns the capture it replaced.
func (w *Worker) Capture(c *Capture) *Capture { return w.capture.Swap(c) }
