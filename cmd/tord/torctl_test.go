package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTorctl operates a live tord with torctl, as an operator would:
// status and the tables, a stage switched off and on with the traffic
// showing it, a log level, reloads with a good file, a bad one and one
// that needs a restart (by torctl and by SIGHUP), and a capture that
// tshark decodes.
func TestTorctl(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	torctlBin := filepath.Join(filepath.Dir(bin), "torctl")
	if out, err := exec.Command("go", "build", "-o", torctlBin, "../torctl").CombinedOutput(); err != nil {
		t.Fatalf("go build torctl: %v\n%s", err, out)
	}
	tp := newTopo(t)
	cfg := filepath.Join(t.TempDir(), "tord.yaml")
	// ICMP toward h2 is lost at s2 until impairment is switched
	// off there (dscp: 0 matches IP only, so ARP still resolves h2).
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("ports: [s1, s2]\nmetrics_addr: 127.0.0.1:9478\nadmin_addr: 127.0.0.1:9479\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lossy := "impair:\n  rules:\n    - {port: s2, direction: egress, match: all, dscp: 0, loss: LOSS}\n"
	write(strings.ReplaceAll(lossy, "LOSS", "1"))
	td := startTord(t, bin, tp.sw, "--config", cfg)
	if err := td.waitReady(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	torctl := func(args ...string) (int, string) {
		t.Helper()
		out, err := nsExec(tp.sw, torctlBin, args...)
		return exitCode(err), out
	}
	pings := func() bool {
		_, err := tp.ping(tp.h1, "-c1", "-W0.5", "10.0.2.2")
		return err == nil
	}

	t.Run("status", func(t *testing.T) {
		code, out := torctl("status")
		// impair is the wire's, not a pipeline stage; trust runs first always
		if code != 0 || !regexp.MustCompile(`pipeline\s+trust → fwd\n`).MatchString(out) || !strings.Contains(out, cfg) {
			t.Errorf("status: exit %d\n%s", code, out)
		}
		for _, cmd := range []string{"ports", "queues", "workers", "stages", "drops"} {
			code, out := torctl("-o", "json", cmd)
			var v any
			if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
				t.Errorf("%s -o json: exit %d, %v\n%s", cmd, code, err, out)
			}
			// A header and a row each, but drops: nothing was dropped.
			if code, out := torctl(cmd); code != 0 || cmd != "drops" && len(strings.Split(strings.TrimSpace(out), "\n")) < 2 {
				t.Errorf("%s: exit %d\n%s", cmd, code, out)
			}
		}
		if code, out := torctl("queues", "s9"); code != 1 || !strings.Contains(out, `no port "s9"`) {
			t.Errorf("queues of an unknown port: exit %d\n%s", code, out)
		}
		if code, out := torctl("flows"); code != 1 || !strings.Contains(out, "netrt is not configured") {
			t.Errorf("flows without netrt: exit %d\n%s", code, out)
		}
	})

	t.Run("stage", func(t *testing.T) {
		if pings() {
			t.Fatal("ping passed a port that loses everything")
		}
		if code, out := torctl("stage", "off", "impair", "s2"); code != 0 || !strings.Contains(out, "s2=off") {
			t.Fatalf("stage off: exit %d\n%s", code, out)
		}
		tp.warmUp(t, "10.0.2.2")
		if code, out := torctl("stage", "on", "impair", "s2"); code != 0 || !strings.Contains(out, "s2=on") {
			t.Fatalf("stage on: exit %d\n%s", code, out)
		}
		if pings() {
			t.Error("ping passed with impair switched on again")
		}
		for _, args := range [][]string{{"stage", "off", "fwd", "s2"}, {"stage", "off", "impair", "s1"}, {"stage", "off", "trim", "s2"}} {
			if code, out := torctl(args...); code != 1 {
				t.Errorf("%v: exit %d, want a refusal\n%s", args, code, out)
			}
		}
	})

	t.Run("log-level", func(t *testing.T) {
		if code, out := torctl("log-level", "debug"); code != 0 || strings.TrimSpace(out) != "debug" {
			t.Errorf("log-level debug: exit %d\n%s", code, out)
		}
		if code, out := torctl("log-level", "chatty"); code != 1 {
			t.Errorf("log-level chatty: exit %d\n%s", code, out)
		}
		torctl("log-level", "info")
	})

	t.Run("reload", func(t *testing.T) {
		// Bad files change nothing: ICMP is still lost.
		write("impair: {rules: [{port: s2, direction: sideways}]}\n")
		if code, out := torctl("reload"); code != 1 || !strings.Contains(out, "reload refused") || !strings.Contains(out, "direction") {
			t.Errorf("invalid file: exit %d\n%s", code, out)
		}
		write("workers: 2\n" + strings.ReplaceAll(lossy, "LOSS", "0"))
		if code, out := torctl("reload"); code != 1 || !strings.Contains(out, "workers changed") {
			t.Errorf("structural change: exit %d\n%s", code, out)
		}
		if pings() {
			t.Error("ping passed after refused reloads")
		}
		// A good file applies its impair rules at once.
		write(strings.ReplaceAll(lossy, "LOSS", "0"))
		if code, out := torctl("reload"); code != 0 || !strings.Contains(out, "impair applied") {
			t.Fatalf("good file: exit %d\n%s", code, out)
		}
		tp.warmUp(t, "10.0.2.2")
		// SIGHUP reloads too.
		write(strings.ReplaceAll(lossy, "LOSS", "1") + "log_level: debug\n")
		td.cmd.Process.Signal(syscall.SIGHUP)
		deadline := time.Now().Add(5 * time.Second)
		for pings() && time.Now().Before(deadline) {
		}
		if pings() || !strings.Contains(td.log(), `"applied":["impair","log_level"]`) {
			t.Errorf("SIGHUP: ping still passes, or the log lacks the reload:\n%s", td.log())
		}
	})

	t.Run("capture", func(t *testing.T) {
		write(strings.ReplaceAll(lossy, "LOSS", "0"))
		if code, out := torctl("reload"); code != 0 {
			t.Fatalf("reload: %s", out)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			tp.ping(tp.h1, "-c20", "-i0.05", "10.0.2.2")
		}()
		pcap := filepath.Join(t.TempDir(), "s2.pcap")
		code, out := torctl("capture", "--port", "s2", "--point", "tx", "--count", "5", "--timeout", "5s", "-w", pcap)
		<-done
		if code != 0 {
			t.Fatalf("capture: exit %d\n%s", code, out)
		}
		if _, err := exec.LookPath("tshark"); err != nil {
			t.Skip("tshark not installed: the pcap is not decoded")
		}
		dec, err := exec.Command("tshark", "-r", pcap, "-T", "fields", "-e", "ip.dst", "-e", "icmp.type").Output()
		lines := strings.Split(strings.TrimSpace(string(dec)), "\n")
		if err != nil || len(lines) != 5 || !strings.Contains(lines[0], "10.0.2.2\t8") {
			t.Errorf("tshark: %v, %d frames\n%s", err, len(lines), dec)
		}
		if code, out := torctl("capture", "--port", "nope", "-w", pcap); code != 1 || !strings.Contains(out, `no port "nope"`) {
			t.Errorf("capture on an unknown port: exit %d\n%s", code, out)
		}
	})
}
