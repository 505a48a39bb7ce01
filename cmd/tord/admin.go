package main

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"rocetor/tor/pipeline"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"rocetor/cmd/tord/api"
	"rocetor/dataplane"
	"rocetor/tor/impair"
)

// The admin API (docs/operations.md, "Admin API"): JSON over HTTP on
// admin_addr, under /api/v1/. Reads are GET; what changes the switch is
// POST or PUT and answers with the new state. Errors are JSON
// {"error": "..."} with a 4xx status, and change nothing. With
// admin_token_file set, every request (pprof too) must carry
// "Authorization: Bearer <token>".
type admin struct {
	sw      *Switch
	cfg     atomic.Pointer[Config] // the configuration in force
	log     *zap.Logger
	level   zap.AtomicLevel
	token   []byte
	started time.Time
	// reload re-reads the configuration the way tord started; nil in
	// tests that do not reload.
	reload  func() (Config, error)
	capture sync.Mutex // one capture at a time
	reloads sync.Mutex // one reload at a time
}

// readToken reads a bearer token file (pipeline.ReadToken).
func readToken(path string) ([]byte, error) { return pipeline.ReadToken(path) }

func newAdmin(cfg Config, sw *Switch, level zap.AtomicLevel, log *zap.Logger, reload func() (Config, error)) (*admin, error) {
	a := &admin{sw: sw, log: log, level: level, started: time.Now(), reload: reload}
	a.cfg.Store(&cfg)
	if cfg.AdminTokenFile != "" {
		var err error
		if a.token, err = readToken(cfg.AdminTokenFile); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// handler returns the admin API's routes behind the token check.
func (a *admin) handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m.HandleFunc("GET /api/v1/status", a.status)
	m.HandleFunc("GET /api/v1/ports", a.ports)
	m.HandleFunc("GET /api/v1/queues", a.queues)
	m.HandleFunc("GET /api/v1/workers", a.workers)
	m.HandleFunc("GET /api/v1/stages", a.stages)
	m.HandleFunc("POST /api/v1/stages/{stage}/ports/{port}", a.toggle)
	m.HandleFunc("GET /api/v1/drops", a.drops)
	m.HandleFunc("GET /api/v1/flows", a.flows)
	m.HandleFunc("GET /api/v1/params", a.params)
	m.HandleFunc("PUT /api/v1/params", a.params)
	m.HandleFunc("POST /api/v1/reload", a.reloadHandler)
	m.HandleFunc("POST /api/v1/capture", a.captureHandler)
	if a.sw.llr != nil {
		m.HandleFunc("/api/v1/llr", llrHandler(a.config().Ports, a.sw.llr, a.sw.monitor))
	} else {
		m.HandleFunc("/api/v1/llr", func(w http.ResponseWriter, _ *http.Request) {
			fail(w, http.StatusNotFound, "llr is not configured (no llr: section)")
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "no such endpoint: %s %s (see docs/operations.md, Admin API)", r.Method, r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.token != nil {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), a.token) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tord"`)
				fail(w, http.StatusUnauthorized, "missing or wrong bearer token")
				return
			}
		}
		m.ServeHTTP(w, r)
	})
}

func (a *admin) config() *Config { return a.cfg.Load() }

// fail writes a JSON error.
func fail(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(api.Error{Error: fmt.Sprintf(format, args...)})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// portIndex finds a port by name, or answers 404 naming the ports.
func (a *admin) portIndex(w http.ResponseWriter, name string) (int, bool) {
	ports := a.config().Ports
	if i := slices.Index(ports, name); i >= 0 {
		return i, true
	}
	fail(w, http.StatusNotFound, "no port %q (ports: %s)", name, strings.Join(ports, ", "))
	return -1, false
}

func (a *admin) status(w http.ResponseWriter, _ *http.Request) {
	c := a.config()
	reply(w, api.Status{Version: version(), UptimeSeconds: time.Since(a.started).Seconds(), Ports: c.Ports, Workers: c.Workers,
		Poll: c.Poll, Stages: a.sw.StageNames(), LogLevel: a.level.Level().String(), ConfigFile: c.File})
}

func (a *admin) snapshots() []dataplane.Snapshot {
	var out []dataplane.Snapshot
	for _, w := range a.sw.Workers() {
		out = append(out, w.Snapshot())
	}
	return out
}

func (a *admin) ports(w http.ResponseWriter, _ *http.Request) {
	snaps := a.snapshots()
	out := []api.Port{}
	for i, name := range a.config().Ports {
		v := api.Port{Name: name, Index: i}
		if i < len(a.sw.modes) {
			v.XDPMode = a.sw.modes[i].String()
		}
		for _, s := range snaps {
			if i >= len(s.Ports) {
				continue
			}
			c, ps := s.Ports[i], s.PortStats[i]
			v.RxPackets += c.RxPackets
			v.RxBytes += c.RxBytes
			v.TxPackets += c.TxPackets
			v.TxBytes += c.TxBytes
			v.PFCRx += c.PFCRx
			v.PFCTx += c.PFCTx
			v.RxDropped += ps.RxDropped
			v.TxRefused += ps.TxRefused
			v.ZeroCopy = ps.ZeroCopy
		}
		out = append(out, v)
	}
	reply(w, out)
}

func (a *admin) queues(w http.ResponseWriter, r *http.Request) {
	snaps := a.snapshots()
	only := r.URL.Query().Get("port")
	if only != "" {
		if _, ok := a.portIndex(w, only); !ok {
			return
		}
	}
	out := []api.Queue{}
	classes := map[string]*api.QueueQoS{}
	for _, c := range a.config().QueueClasses() {
		classes[c.Queue] = &api.QueueQoS{TrafficClasses: c.Classes, DSCPs: c.DSCPs, Scheduler: c.Scheduler, Weight: c.Weight, PFCPriority: c.PFC}
	}
	for i, name := range a.config().Ports {
		if only != "" && name != only {
			continue
		}
		var qs []api.Queue
		for _, s := range snaps {
			if i >= len(s.Queues) {
				continue
			}
			for k, q := range s.Queues[i] {
				if k == len(qs) {
					qs = append(qs, api.Queue{Port: name, Queue: q.Name, QoS: classes[q.Name]})
				}
				v := &qs[k]
				v.DepthBytes += q.DepthBytes
				v.DepthPackets += q.DepthPackets
				v.LimitBytes += q.LimitBytes
				v.MaxDepthBytes = max(v.MaxDepthBytes, q.MaxDepthBytes)
				v.Paused = v.Paused || q.Paused
				v.Enqueued += q.Enqueued
				v.Dequeued += q.Dequeued
				v.Drops += q.Drops
				v.ECT += q.ECT
				v.Marked += q.Marked
				if q.ECN.On() {
					if v.ECN == nil {
						v.ECN = &api.QueueECN{Mark: q.MarkAt.String()}
					}
					v.ECN.MinThresholdBytes += q.ECN.MinBytes
					v.ECN.MaxThresholdBytes += q.ECN.MaxBytes
					v.ECN.ProbabilityPercent = max(v.ECN.ProbabilityPercent, 100*q.ECN.PMax)
				}
			}
		}
		out = append(out, qs...)
	}
	reply(w, out)
}

func (a *admin) workers(w http.ResponseWriter, _ *http.Request) {
	out := []api.Worker{}
	for _, s := range a.snapshots() {
		v := api.Worker{Worker: s.Worker, BusyPolls: s.BusyPolls, IdlePolls: s.IdlePolls, Sleeps: s.Sleeps,
			FramesUsed: s.FramesUse, Frames: s.Frames, Timers: s.Timers, Batches: s.Batches[:]}
		if n := s.BusyPolls + s.IdlePolls; n > 0 {
			v.BusyRatio = float64(s.BusyPolls) / float64(n)
		}
		out = append(out, v)
	}
	reply(w, out)
}

func (a *admin) stages(w http.ResponseWriter, _ *http.Request) {
	names := a.sw.StageNames()
	if a.sw.impair != nil {
		// Not in the pipeline (it impairs the ports themselves, so it
		// has no calls), but switched per port like a stage.
		names = append(names, "impair")
	}
	out := make([]api.Stage, len(names))
	for i, n := range names {
		out[i].Name = n
		if t := a.toggles(n); t != nil {
			out[i].Ports = map[string]bool{}
			for j, p := range a.config().Ports {
				if on, ok := t.get(j, p); ok {
					out[i].Ports[p] = on
				}
			}
		}
	}
	for _, s := range a.snapshots() {
		for i := range out {
			if i < len(s.Stages) {
				out[i].Calls += s.Stages[i].Calls
				out[i].Packets += s.Stages[i].Packets
			}
		}
	}
	for i := range out {
		if out[i].Calls > 0 {
			out[i].MeanBatch = float64(out[i].Packets) / float64(out[i].Calls)
		}
	}
	reply(w, out)
}

// toggle is a stage that can be switched on and off per port at run time.
type toggle struct {
	get func(i int, name string) (on, ok bool) // ok: the stage acts on this port
	set func(i int, name string, on bool)
}

func (a *admin) toggles(stage string) *toggle {
	switch stage {
	case "trim":
		ts := a.sw.trims
		if len(ts) == 0 {
			return nil
		}
		return &toggle{
			get: func(i int, name string) (bool, bool) { return ts[0].PortOn(i), a.config().Trim.Trims(name) },
			set: func(i int, _ string, on bool) {
				for _, t := range ts {
					t.SetPort(i, on)
				}
			},
		}
	case "impair":
		ctl := a.sw.impair
		if ctl == nil {
			return nil
		}
		return &toggle{
			get: func(_ int, name string) (bool, bool) {
				return ctl.PortOn(name), slices.ContainsFunc(ctl.Config().Rules, func(r impair.Rule) bool { return r.Port == name })
			},
			set: func(_ int, name string, on bool) { ctl.SetPort(name, on) },
		}
	}
	return nil
}

// toggle serves POST /api/v1/stages/{stage}/ports/{port}?state=on|off.
func (a *admin) toggle(w http.ResponseWriter, r *http.Request) {
	stage, port := r.PathValue("stage"), r.PathValue("port")
	t := a.toggles(stage)
	// impair is no pipeline stage but the wire's, switched like one.
	if !slices.Contains(a.sw.StageNames(), stage) && (stage != "impair" || t == nil) {
		fail(w, http.StatusNotFound, "no stage %q in the pipeline (stages: %s)", stage, strings.Join(a.sw.StageNames(), ", "))
		return
	}
	if t == nil {
		fail(w, http.StatusBadRequest, "stage %q cannot be switched per port (trim and impair can; llr through /api/v1/llr)", stage)
		return
	}
	i, ok := a.portIndex(w, port)
	if !ok {
		return
	}
	if _, acts := t.get(i, port); !acts {
		fail(w, http.StatusBadRequest, "stage %q does not act on port %q", stage, port)
		return
	}
	var on bool
	switch r.URL.Query().Get("state") {
	case "on":
		on = true
	case "off":
	default:
		fail(w, http.StatusBadRequest, "want state=on or state=off")
		return
	}
	t.set(i, port, on)
	a.log.Info("stage switched", zap.String("stage", stage), zap.String("port", port), zap.Bool("on", on))
	a.stages(w, r)
}

func (a *admin) drops(w http.ResponseWriter, _ *http.Request) {
	out := map[string]uint64{}
	for _, s := range a.snapshots() {
		for i, n := range s.Drops {
			if n > 0 {
				out[dataplane.Reason(i).String()] += n
			}
		}
	}
	reply(w, out)
}

func (a *admin) flows(w http.ResponseWriter, r *http.Request) {
	if len(a.sw.dsts) == 0 {
		fail(w, http.StatusNotFound, "no flow state: netrt is not configured")
		return
	}
	fs := busiestFlows(a.config().Ports, a.sw.dsts)
	if n, err := strconv.Atoi(r.URL.Query().Get("n")); err == nil && n >= 0 && n < len(fs) {
		fs = fs[:n]
	}
	reply(w, fs)
}

func (a *admin) params(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut {
		var p api.Params
		d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		d.DisallowUnknownFields()
		if err := d.Decode(&p); err != nil {
			fail(w, http.StatusBadRequest, "parameters: %v (settable: log_level)", err)
			return
		}
		if p.LogLevel != "" {
			if err := a.level.UnmarshalText([]byte(p.LogLevel)); err != nil || !slices.Contains([]string{"debug", "info", "warn", "error"}, p.LogLevel) {
				fail(w, http.StatusBadRequest, "log_level %q: want debug, info, warn or error", p.LogLevel)
				return
			}
			a.log.Info("log level changed", zap.String("level", p.LogLevel))
		}
	}
	reply(w, api.Params{LogLevel: a.level.Level().String()})
}

// errRestart marks a reload whose changes need a restart.
var errRestart = errors.New("needs a restart")
