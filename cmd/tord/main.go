package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"rocetor/dataplane/metrics"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run is main without the exit: 0 on a clean stop, 1 on a runtime
// failure, 2 on bad flags or configuration.
func run(args []string, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "tord:", err)
		return 2
	}
	log, err := newLogger(cfg.LogLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "tord:", err)
		return 2
	}
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sw, err := OpenSwitch(cfg, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	defer sw.Close()

	var ready atomic.Bool
	srv, err := serve(cfg, sw, &ready, log)
	if err != nil {
		log.Error("cannot serve metrics", zap.Error(err))
		return 1
	}
	defer srv.close()

	// Not ready from the moment a stop is asked for, so a load balancer or
	// orchestrator stops sending before the listener goes away.
	go func() { <-ctx.Done(); ready.Store(false) }()
	log.Info("forwarding", zap.Strings("ports", cfg.Ports), zap.Int("workers", cfg.Workers), zap.String("poll", cfg.Poll))
	if err := sw.Run(ctx, func() { ready.Store(true) }); err != nil {
		log.Error("stopped", zap.Error(err))
		return 1
	}
	log.Info("stopping")
	return 0
}

// parseFlags loads the config file if one is named, then applies the
// flags the user set, then validates.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("tord", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := DefaultConfig()
	path := fs.String("config", "", "YAML configuration file")
	ports := fs.String("ports", "", "comma-separated interfaces the switch owns (at least two)")
	workers := fs.Int("workers", def.Workers, "poll-mode workers; each needs its own rx queue on every port")
	poll := fs.String("poll", def.Poll, "worker polling: busy, adaptive or interrupt")
	metricsAddr := fs.String("metrics-addr", def.MetricsAddr, "listen address of /metrics, /healthz and /readyz")
	adminAddr := fs.String("admin-addr", def.AdminAddr, "loopback listen address of pprof (empty disables)")
	logLevel := fs.String("log-level", def.LogLevel, "debug, info, warn or error")
	xdpMode := fs.String("xdp-mode", def.XDP.Mode, "XDP attach mode: auto, native or generic")
	rate := fs.String("rate", "0", "shaped egress rate per port, e.g. 10G (0: unshaped)")
	verify := fs.Bool("verify-icrc", false, "drop RoCEv2 frames with a bad ICRC")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg := def
	if *path != "" {
		var err error
		if cfg, err = LoadConfig(*path); err != nil {
			return cfg, err
		}
	}
	var rerr error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "ports":
			cfg.Ports = strings.Split(*ports, ",")
		case "workers":
			cfg.Workers = *workers
		case "poll":
			cfg.Poll = *poll
		case "metrics-addr":
			cfg.MetricsAddr = *metricsAddr
		case "admin-addr":
			cfg.AdminAddr = *adminAddr
		case "log-level":
			cfg.LogLevel = *logLevel
		case "xdp-mode":
			cfg.XDP.Mode = *xdpMode
		case "rate":
			rerr = cfg.Egress.Rate.UnmarshalText([]byte(*rate))
		case "verify-icrc":
			cfg.VerifyICRC = *verify
		}
	})
	if rerr != nil {
		return cfg, fmt.Errorf("--rate: %w", rerr)
	}
	return cfg, cfg.Validate()
}

func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), lvl)
	return zap.New(core), nil
}

type servers struct{ list []*http.Server }

func (s *servers) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range s.list {
		srv.Shutdown(ctx)
	}
}

// serve starts the metrics listener and, on loopback, the admin listener.
func serve(cfg Config, sw *Switch, ready *atomic.Bool, log *zap.Logger) (*servers, error) {
	reg := prometheus.NewRegistry()
	srcs := make([]metrics.Source, len(sw.Workers()))
	for i, w := range sw.Workers() {
		srcs[i] = w
	}
	reg.MustRegister(metrics.New(cfg.Ports, sw.StageNames(), srcs...),
		xdpCollector{ports: cfg.Ports, progs: sw.progs},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(sw.srcs) > 0 {
		reg.MustRegister(&netrtCollector{ports: cfg.Ports, srcs: sw.srcs, dsts: sw.dsts})
	}
	if sw.llr != nil {
		reg.MustRegister(&llrCollector{ports: cfg.Ports, stage: sw.llr, monitor: sw.monitor})
	}
	if len(sw.trims) > 0 {
		reg.MustRegister(newTrimCollector(cfg, sw.trims))
	}
	if cfg.Forwarding.Multipath == "adaptive" {
		reg.MustRegister(&adaptiveCollector{ports: cfg.Ports, stages: sw.stages})
	}
	if len(sw.impairs) > 0 && hasImpairTrim(cfg) {
		reg.MustRegister(&impairTrimCollector{ports: cfg.Ports, impairs: sw.impairs})
	}
	m := http.NewServeMux()
	m.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	m.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	m.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	s := &servers{}
	if err := listen(s, cfg.MetricsAddr, m, log); err != nil {
		return nil, err
	}
	if cfg.AdminAddr != "" {
		a := http.NewServeMux()
		a.HandleFunc("/debug/pprof/", pprof.Index)
		a.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		a.HandleFunc("/debug/pprof/profile", pprof.Profile)
		a.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		a.HandleFunc("/debug/pprof/trace", pprof.Trace)
		if sw.llr != nil {
			a.HandleFunc("/llr", llrHandler(cfg.Ports, sw.llr, sw.monitor))
		}
		if len(sw.dsts) > 0 {
			a.HandleFunc("/netrt/flows", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(busiestFlows(cfg.Ports, sw.dsts))
			})
		}
		if err := listen(s, cfg.AdminAddr, a, log); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func listen(s *servers, addr string, h http.Handler, log *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.list = append(s.list, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", zap.String("addr", addr), zap.Error(err))
		}
	}()
	log.Info("listening", zap.String("addr", ln.Addr().String()))
	return nil
}
