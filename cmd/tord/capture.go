package main

import (
	"net/http"
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
	port, ok := a.portIndex(w, q.Get("port"))
	if !ok {
		return
	}
	pointName := q.Get("point")
	if pointName == "" {
		pointName = "rx"
		if q.Get("stage") != "" {
			pointName = "stage"
		}
	}
	point, err := dataplane.ParseCapturePoint(pointName)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	stage := 0
	if point == dataplane.CaptureStage {
		names := a.sw.StageNames()
		if stage = slices.Index(names, q.Get("stage")); stage < 0 {
			fail(w, http.StatusBadRequest, "stage %q is not in the pipeline (stages: %s)", q.Get("stage"), strings.Join(names, ", "))
			return
		}
	} else if q.Get("stage") != "" {
		fail(w, http.StatusBadRequest, "stage is only for point=stage")
		return
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
	count, ok := num("count", defaultCaptureCount)
	if !ok {
		return
	}
	snap, ok := num("snaplen", a.config().XDP.FrameSize)
	if !ok {
		return
	}
	timeout := defaultCaptureTimeout
	if s := q.Get("timeout"); s != "" {
		if timeout, err = time.ParseDuration(s); err != nil || timeout <= 0 || timeout > maxCaptureTimeout {
			fail(w, http.StatusBadRequest, "timeout=%q: want a duration up to %v", s, maxCaptureTimeout)
			return
		}
	}
	if err := dataplane.CheckCapture(port, point, stage, count, snap); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	// One at a time, decided before the slots are allocated.
	if !a.capture.TryLock() {
		fail(w, http.StatusConflict, "a capture is running already; one at a time")
		return
	}
	defer a.capture.Unlock()
	workers := a.sw.Workers()
	caps := make([]*dataplane.Capture, len(workers))
	for i := range caps {
		if caps[i], err = dataplane.NewCapture(port, point, stage, count, snap); err != nil {
			fail(w, http.StatusBadRequest, "%v", err)
			return
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
	deadline := time.NewTimer(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
wait:
	for taken() < count {
		select {
		case <-tick.C:
		case <-deadline.C:
			break wait
		case <-r.Context().Done():
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
	frames = frames[:min(len(frames), count)]
	a.log.Info("capture", zap.String("port", q.Get("port")), zap.String("point", pointName), zap.Int("frames", len(frames)))

	w.Header().Set("Content-Type", "application/vnd.tcpdump.pcap")
	w.Header().Set("X-Rocetor-Frames", strconv.Itoa(len(frames)))
	pcap.Write(w, snap, frames) // a client gone away is all that can fail
}
