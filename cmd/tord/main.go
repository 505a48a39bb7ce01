package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"golang.org/x/sys/unix"

	"rocetor/afxdp"
	"rocetor/bpf"
	"rocetor/tor/telemetry"
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
	level, err := zap.ParseAtomicLevel(cfg.LogLevel)
	if err != nil {
		fmt.Fprintln(stderr, "tord:", err)
		return 2
	}
	log, err := newLogger(level, stderr)
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
		if lasting(err) {
			return 2
		}
		return 1
	}
	defer sw.Close()

	// A reload reads the file and applies the flags exactly as at start.
	reload := func() (Config, error) { return parseFlags(args, io.Discard) }
	adm, err := newAdmin(cfg, sw, level, log.Named("admin"), reload)
	if err != nil {
		log.Error("admin API", zap.Error(err))
		return 1
	}
	var ready atomic.Bool
	srv, err := serve(cfg, sw, adm, &ready, log)
	if err != nil {
		log.Error("cannot serve metrics", zap.Error(err))
		return 1
	}
	defer srv.close()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				adm.reloadAndLog()
			case <-ctx.Done():
				return
			}
		}
	}()

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
	poll := fs.String("poll", def.Poll, "worker polling: busy, adaptive, interrupt or spin")
	metricsAddr := fs.String("metrics-addr", def.MetricsAddr, "listen address of /metrics, /healthz and /readyz")
	adminAddr := fs.String("admin-addr", def.AdminAddr, "listen address of the admin API and pprof (empty disables); loopback unless --admin-token-file")
	tokenFile := fs.String("admin-token-file", "", "file whose first line is the bearer token every admin request must carry")
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
		cfg.File = *path
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
		case "admin-token-file":
			cfg.AdminTokenFile = *tokenFile
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

// lasting reports whether a start failure will fail the same way on a
// retry: missing privileges or ports, a port another XDP program holds,
// frame memory above the memlock limit, zero-copy the driver lacks. tord
// exits 2 for them, which deploy/systemd/tord.service does not restart.
func lasting(err error) bool {
	return errors.Is(err, ErrPreflight) || errors.Is(err, bpf.ErrBusy) || errors.Is(err, afxdp.ErrZeroCopy) ||
		errors.Is(err, unix.ENOBUFS) // register umem: above RLIMIT_MEMLOCK without CAP_IPC_LOCK
}

// newLogger logs JSON lines to w at level, which the admin API may
// change while tord runs.
func newLogger(lvl zap.AtomicLevel, w io.Writer) (*zap.Logger, error) {
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

// serve starts the metrics listener and the admin listener.
func serve(cfg Config, sw *Switch, adm *admin, ready *atomic.Bool, log *zap.Logger) (*servers, error) {
	reg, err := registry(cfg, sw)
	if err != nil {
		return nil, err
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
		if err := listen(s, cfg.AdminAddr, adm.handler(), log); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// registry returns what /metrics serves: the switch's families
// (tor/telemetry), its XDP programs', Go's and the process's.
func registry(cfg Config, sw *Switch) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(xdpCollector{ports: cfg.Ports, progs: sw.progs},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	err := telemetry.Register(reg, telemetry.Switch{Config: &cfg, Pipelines: sw.pls, LLRMonitor: sw.monitor})
	return reg, err
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
