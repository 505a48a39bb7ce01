package main

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"rocetor/dataplane"
	"rocetor/dataplane/pcap"
)

// Capture defaults and bounds.
const (
	defaultCaptureCount   = 100
	defaultCaptureTimeout = 10 * time.Second
	maxCaptureTimeout     = 5 * time.Minute
)

// captureRequest is what a capture request asks for.
type captureRequest struct {
	port        int
	point       dataplane.CapturePoint
	pointName   string
	stage       int
	count, snap int
	timeout     time.Duration
}

// captureHandler serves POST /api/v1/capture?port=P[&point=rx|tx|rxtx|stage]
// [&stage=S][&count=N][&snaplen=L][&timeout=D]: it arms a capture on
// every worker, waits until count frames are taken, the timeout passes or
// the client goes away, and answers with a pcap of the frames in time
// order. Forwarding goes on meanwhile; each worker copies at most count
// frames of snaplen bytes (at most dataplane.MaxCaptureBytes). With a
// stage and no point, the point is "stage": the frames that stage
// forwarded or emitted toward the port.
func (a *admin) captureHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, ok := a.captureRequest(w, q)
	if !ok {
		return
	}
	// One at a time, decided before the slots are allocated.
	if !a.capture.TryLock() {
		fail(w, http.StatusConflict, "a capture is running already; one at a time")
		return
	}
	defer a.capture.Unlock()
	frames, err := a.runCapture(r.Context(), c)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	a.log.Info("capture", zap.String("port", q.Get("port")), zap.String("point", c.pointName), zap.Int("frames", len(frames)))

	w.Header().Set("Content-Type", "application/vnd.tcpdump.pcap")
	w.Header().Set("X-Rocetor-Frames", strconv.Itoa(len(frames)))
	pcap.Write(w, c.snap, frames) // a client gone away is all that can fail
}

// captureRequest reads and checks a capture request's parameters; on
// false it has answered the client.
func (a *admin) captureRequest(w http.ResponseWriter, q url.Values) (captureRequest, bool) {
	var c captureRequest
	port, ok := a.portIndex(w, q.Get("port"))
	if !ok {
		return c, false
	}
	c.port = port
	c.pointName = q.Get("point")
	if c.pointName == "" {
		c.pointName = "rx"
		if q.Get("stage") != "" {
			c.pointName = "stage"
		}
	}
	var err error
	if c.point, err = dataplane.ParseCapturePoint(c.pointName); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return c, false
	}
	if c.point == dataplane.CaptureStage {
		names := a.sw.StageNames()
		if c.stage = slices.Index(names, q.Get("stage")); c.stage < 0 {
			fail(w, http.StatusBadRequest, "stage %q is not in the pipeline (stages: %s)", q.Get("stage"), strings.Join(names, ", "))
			return c, false
		}
	} else if q.Get("stage") != "" {
		fail(w, http.StatusBadRequest, "stage is only for point=stage")
		return c, false
	}
	num := func(key string, def int) (int, bool) {
		s := q.Get(key)
		if s == "" {
			return def, true
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			fail(w, http.StatusBadRequest, "%s=%q is not a number", key, s)
			return 0, false
		}
		return n, true
	}
	if c.count, ok = num("count", defaultCaptureCount); !ok {
		return c, false
	}
	if c.snap, ok = num("snaplen", a.config().XDP.FrameSize); !ok {
		return c, false
	}
	c.timeout = defaultCaptureTimeout
	if s := q.Get("timeout"); s != "" {
		if c.timeout, err = time.ParseDuration(s); err != nil || c.timeout <= 0 || c.timeout > maxCaptureTimeout {
			fail(w, http.StatusBadRequest, "timeout=%q: want a duration up to %v", s, maxCaptureTimeout)
			return c, false
		}
	}
	if err := dataplane.CheckCapture(c.port, c.point, c.stage, c.count, c.snap); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return c, false
	}
	return c, true
}

// runCapture arms c on every worker, waits until c.count frames are
// taken, c.timeout passes or ctx is done, and returns at most c.count
// frames in time order.
func (a *admin) runCapture(ctx context.Context, c captureRequest) ([]dataplane.CaptureRecord, error) {
	workers := a.sw.Workers()
	caps := make([]*dataplane.Capture, len(workers))
	for i := range caps {
		var err error
		if caps[i], err = dataplane.NewCapture(c.port, c.point, c.stage, c.count, c.snap); err != nil {
			return nil, err
		}
	}
	for i, wk := range workers {
		wk.Capture(caps[i])
	}
	taken := func() int {
		n := 0
		for _, c := range caps {
			n += c.Count()
		}
		return n
	}
	deadline := time.NewTimer(c.timeout)
	tick := time.NewTicker(10 * time.Millisecond)
wait:
	for taken() < c.count {
		select {
		case <-tick.C:
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	tick.Stop()
	deadline.Stop()
	for _, wk := range workers {
		wk.Capture(nil)
	}
	var frames []dataplane.CaptureRecord
	for _, c := range caps {
		frames = append(frames, c.Frames()...)
	}
	slices.SortStableFunc(frames, func(x, y dataplane.CaptureRecord) int { return x.Time.Compare(y.Time) })
	return frames[:min(len(frames), c.count)], nil
}
