package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"rocetor/cmd/tord/api"
)

// commands are torctl's commands by name.
var commands = map[string]func(c *client, args []string) error{
	"status":    statusCmd,
	"ports":     portsCmd,
	"queues":    queuesCmd,
	"workers":   workersCmd,
	"stages":    stagesCmd,
	"stage":     stageCmd,
	"drops":     dropsCmd,
	"flows":     flowsCmd,
	"llr":       llrCmd,
	"log-level": logLevelCmd,
	"reload":    reloadCmd,
	"capture":   captureCmd,
}

func noArgs(name string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: %s takes no arguments", errUsage, name)
	}
	return nil
}

func statusCmd(c *client, args []string) error {
	if err := noArgs("status", args); err != nil {
		return err
	}
	var s api.Status
	if err := c.do("GET", "/api/v1/status", nil, &s); err != nil || c.json {
		return err
	}
	t := c.table()
	fmt.Fprintf(t, "version\t%s\n", s.Version)
	fmt.Fprintf(t, "uptime\t%s\n", (time.Duration(s.UptimeSeconds) * time.Second).String())
	fmt.Fprintf(t, "config\t%s\n", or(s.ConfigFile, "(flags only)"))
	fmt.Fprintf(t, "ports\t%s\n", strings.Join(s.Ports, ", "))
	fmt.Fprintf(t, "workers\t%d (%s polling)\n", s.Workers, s.Poll)
	fmt.Fprintf(t, "pipeline\t%s\n", strings.Join(s.Stages, " → "))
	fmt.Fprintf(t, "log level\t%s\n", s.LogLevel)
	return t.Flush()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func portsCmd(c *client, args []string) error {
	if err := noArgs("ports", args); err != nil {
		return err
	}
	var ps []api.Port
	if err := c.do("GET", "/api/v1/ports", nil, &ps); err != nil || c.json {
		return err
	}
	t := c.table()
	fmt.Fprintln(t, "PORT\tXDP\tRX PKTS\tRX BYTES\tTX PKTS\tTX BYTES\tPFC RX\tPFC TX\tPFC STORMS\tRX RING DROPS\tTX REFUSED")
	for _, p := range ps {
		mode := p.XDPMode
		if p.ZeroCopy {
			mode += "/zc"
		}
		fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\n", p.Name, mode, p.RxPackets, p.RxBytes, p.TxPackets, p.TxBytes,
			p.PFCRx, p.PFCTx, storms(p), p.RxDropped, p.TxRefused)
	}
	return t.Flush()
}

// storms is the PFC STORMS column: the storms the PFC watchdog declared
// on the port and, while any priority is stormed, how many ("2 (1 now)").
func storms(p api.Port) string {
	now := p.PFCWatchdogStorms - p.PFCWatchdogRestores
	if now == 0 {
		return fmt.Sprint(p.PFCWatchdogStorms)
	}
	return fmt.Sprintf("%d (%d now)", p.PFCWatchdogStorms, now)
}

func queuesCmd(c *client, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("%w: queues [PORT]", errUsage)
	}
	var q url.Values
	if len(args) == 1 {
		q = url.Values{"port": {args[0]}}
	}
	var qs []api.Queue
	if err := c.do("GET", "/api/v1/queues", q, &qs); err != nil || c.json {
		return err
	}
	t := c.table()
	fmt.Fprintln(t, "PORT\tQUEUE\tTC\tSCHED\tPFC\tDEPTH (B)\tPKTS\tLIMIT (B)\tPEAK (B)\tPAUSED\tENQUEUED\tDEQUEUED\tDROPS\tECT\tCE MARKED\tECN (MIN/MAX B, PMAX, AT)")
	for _, x := range qs {
		ecn := "off"
		if e := x.ECN; e != nil {
			ecn = fmt.Sprintf("%d/%d %g%% %s", e.MinThresholdBytes, e.MaxThresholdBytes, e.ProbabilityPercent, e.Mark)
		}
		tc, sched, pfc := qosColumns(x.QoS)
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%v\t%d\t%d\t%d\t%d\t%d\t%s\n", x.Port, x.Queue, tc, sched, pfc,
			x.DepthBytes, x.DepthPackets, x.LimitBytes, x.MaxDepthBytes, x.Paused, x.Enqueued, x.Dequeued, x.Drops, x.ECT, x.Marked, ecn)
	}
	return t.Flush()
}

// qosColumns are queues' traffic classes, scheduler and PFC priority:
// "3", "dwrr:50", "3"; "-" for a queue no class maps to.
func qosColumns(q *api.QueueQoS) (tc, sched, pfc string) {
	if q == nil {
		return "-", "-", "-"
	}
	var tcs []string
	for _, c := range q.TrafficClasses {
		tcs = append(tcs, strconv.Itoa(c))
	}
	tc, sched, pfc = strings.Join(tcs, ","), q.Scheduler, "lossy"
	if q.Scheduler == "dwrr" {
		sched = fmt.Sprintf("dwrr:%d", q.Weight)
	}
	if q.PFCPriority >= 0 {
		pfc = strconv.Itoa(q.PFCPriority)
	}
	return tc, sched, pfc
}

func workersCmd(c *client, args []string) error {
	if err := noArgs("workers", args); err != nil {
		return err
	}
	var ws []api.Worker
	if err := c.do("GET", "/api/v1/workers", nil, &ws); err != nil || c.json {
		return err
	}
	t := c.table()
	fmt.Fprintln(t, "WORKER\tBUSY LOOPS\tIDLE LOOPS\tSLEEPS\tBUSY\tFRAMES USED\tTIMERS\tBATCHES 1|2-3|4-7|8-15|16-31|32-63|64")
	for _, w := range ws {
		var b []string
		for _, n := range w.Batches {
			b = append(b, strconv.FormatUint(n, 10))
		}
		fmt.Fprintf(t, "%d\t%d\t%d\t%d\t%.1f%%\t%d/%d\t%d\t%s\n", w.Worker, w.BusyPolls, w.IdlePolls, w.Sleeps, 100*w.BusyRatio,
			w.FramesUsed, w.Frames, w.Timers, strings.Join(b, "|"))
	}
	return t.Flush()
}

func printStages(c *client, ss []api.Stage) error {
	t := c.table()
	fmt.Fprintln(t, "STAGE\tCALLS\tPACKETS\tMEAN BATCH\tPORTS")
	for _, s := range ss {
		var ports []string
		for p, on := range s.Ports {
			ports = append(ports, p+"="+map[bool]string{true: "on", false: "off"}[on])
		}
		sort.Strings(ports)
		fmt.Fprintf(t, "%s\t%d\t%d\t%.1f\t%s\n", s.Name, s.Calls, s.Packets, s.MeanBatch, or(strings.Join(ports, " "), "-"))
	}
	return t.Flush()
}

func stagesCmd(c *client, args []string) error {
	if err := noArgs("stages", args); err != nil {
		return err
	}
	var ss []api.Stage
	if err := c.do("GET", "/api/v1/stages", nil, &ss); err != nil || c.json {
		return err
	}
	return printStages(c, ss)
}

func stageCmd(c *client, args []string) error {
	if len(args) != 3 || (args[0] != "on" && args[0] != "off") {
		return fmt.Errorf("%w: stage on|off STAGE PORT", errUsage)
	}
	var ss []api.Stage
	path := "/api/v1/stages/" + url.PathEscape(args[1]) + "/ports/" + url.PathEscape(args[2])
	if err := c.do("POST", path, url.Values{"state": {args[0]}}, &ss); err != nil || c.json {
		return err
	}
	return printStages(c, ss)
}

func dropsCmd(c *client, args []string) error {
	if err := noArgs("drops", args); err != nil {
		return err
	}
	var d map[string]uint64
	if err := c.do("GET", "/api/v1/drops", nil, &d); err != nil || c.json {
		return err
	}
	reasons := make([]string, 0, len(d))
	for r := range d {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool { return d[reasons[i]] > d[reasons[j]] })
	t := c.table()
	fmt.Fprintln(t, "REASON\tFRAMES")
	for _, r := range reasons {
		fmt.Fprintf(t, "%s\t%d\n", r, d[r])
	}
	return t.Flush()
}

func flowsCmd(c *client, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("%w: flows [N]", errUsage)
	}
	var q url.Values
	if len(args) == 1 {
		if _, err := strconv.Atoi(args[0]); err != nil {
			return fmt.Errorf("%w: flows %q: N is a number", errUsage, args[0])
		}
		q = url.Values{"n": {args[0]}}
	}
	var fs []api.Flow
	if err := c.do("GET", "/api/v1/flows", q, &fs); err != nil || c.json {
		return err
	}
	t := c.table()
	fmt.Fprintln(t, "PORT\tSRC\tDST\tQP\tSTATE\tEPSN\tHELD\tHELD BYTES\tREQUESTS")
	for _, f := range fs {
		fmt.Fprintf(t, "%s\t%s\t%s\t%#x\t%s\t%d\t%d\t%d\t%d\n", f.Port, f.Src, f.Dst, f.QP, f.State, f.EPSN, f.Held, f.HeldBytes, f.Requests)
	}
	return t.Flush()
}

func logLevelCmd(c *client, args []string) error {
	var p api.Params
	var err error
	switch len(args) {
	case 0:
		err = c.do("GET", "/api/v1/params", nil, &p)
	case 1:
		b, _ := json.Marshal(map[string]string{"log_level": args[0]})
		err = c.send("PUT", "/api/v1/params", nil, bytes.NewReader(b), &p)
	default:
		return fmt.Errorf("%w: log-level [LEVEL]", errUsage)
	}
	if err != nil || c.json {
		return err
	}
	fmt.Fprintln(c.out, p.LogLevel)
	return nil
}

func reloadCmd(c *client, args []string) error {
	if err := noArgs("reload", args); err != nil {
		return err
	}
	var r api.Reload
	if err := c.do("POST", "/api/v1/reload", nil, &r); err != nil || c.json {
		return err
	}
	if len(r.Applied) == 0 {
		fmt.Fprintln(c.out, "reloaded: nothing changed")
		return nil
	}
	fmt.Fprintln(c.out, "reloaded:", strings.Join(r.Applied, ", "), "applied")
	return nil
}

func captureCmd(c *client, args []string) error {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	port := fs.String("port", "", "port to capture on")
	point := fs.String("point", "", "rx, tx or stage (default rx, or stage with --stage)")
	stage := fs.String("stage", "", "stage whose output toward the port to capture")
	count := fs.Int("count", 100, "frames to capture")
	snap := fs.Int("snaplen", 0, "bytes kept of each frame (0: whole frames)")
	timeout := fs.Duration("timeout", 10*time.Second, "stop after this long with what was captured")
	file := fs.String("w", "", "pcap file to write")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: capture: %v", errUsage, err)
	}
	if *port == "" || *file == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: capture needs --port and -w FILE", errUsage)
	}
	q := url.Values{"port": {*port}, "count": {strconv.Itoa(*count)}, "timeout": {timeout.String()}}
	if *point != "" {
		q.Set("point", *point)
	}
	if *stage != "" {
		q.Set("stage", *stage)
	}
	if *snap > 0 {
		q.Set("snaplen", strconv.Itoa(*snap))
	}
	c.http.Timeout = *timeout + c.wait
	resp, err := c.request("POST", "/api/v1/capture", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(*file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", *file, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(c.errs, "torctl: %s frames written to %s\n", resp.Header.Get("X-Rocetor-Frames"), *file)
	return nil
}
