package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"rocetor/afxdp"
	"rocetor/bpf"
)

// These run run() in-process and need no privileges: every case fails
// before tord touches the network.

func TestRunBadFlagsExit2(t *testing.T) {
	cases := []struct {
		args []string
		want string // the flag the message must name
	}{
		{[]string{"--bogus"}, "bogus"},
		{[]string{"--ports", "a,b", "--workers", "many"}, "workers"},
		{[]string{"--ports", "a,b", "--workers", "0"}, "workers"},
		{[]string{"--ports", "a,b", "--poll", "spinning"}, "poll"},
		{[]string{"--ports", "a,b", "--rate", "fast"}, "rate"},
		{[]string{"--ports", "a,b", "--xdp-mode", "offload"}, "xdp.mode"},
		{[]string{"--ports", "a,b", "--admin-addr", "0.0.0.0:9479"}, "admin_addr"},
		{[]string{"--ports", "a,b", "--log-level", "loud"}, "log_level"},
		{[]string{"--ports", "a,b", "extra"}, `"extra"`},
		{[]string{"--config", "/nonexistent/tord.yaml"}, "/nonexistent/tord.yaml"},
	}
	for _, c := range cases {
		var out strings.Builder
		if code := run(c.args, &out); code != 2 {
			t.Errorf("run %q = %d, want 2; output:\n%s", c.args, code, out.String())
			continue
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("run %q: output does not name %s:\n%s", c.args, c.want, out.String())
		}
	}
}

func TestRunOnePortExit2(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"--ports", "s1"}, &out); code != 2 {
		t.Fatalf("run --ports s1 = %d, want 2; output:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "ports:") {
		t.Errorf("message does not name ports:\n%s", out.String())
	}
}

func TestRunHelpExit0(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"-h"}, &out); code != 0 {
		t.Fatalf("run -h = %d, want 0", code)
	}
	if !strings.Contains(out.String(), "-ports") {
		t.Errorf("usage does not list --ports:\n%s", out.String())
	}
}

// TestRunUnknownInterfaceExit2 names interfaces that do not exist. As
// root (or with the capabilities) preflight reports the missing
// interface; without them it stops earlier, at the privilege check,
// which is what an unprivileged user sees first. Either is exit 2: a
// restart would not help, so a service manager should not retry.
func TestRunUnknownInterfaceExit2(t *testing.T) {
	var out strings.Builder
	args := []string{"--ports", "nxrocetor0,nxrocetor1", "--metrics-addr", "127.0.0.1:0", "--admin-addr", ""}
	if code := run(args, &out); code != 2 {
		t.Fatalf("run %q = %d, want 2; output:\n%s", args, code, out.String())
	}
	want := []string{"port nxrocetor0", "no such interface"}
	if os.Geteuid() != 0 && !hasCaps() {
		want = []string{"needs root or the capabilities"}
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output does not say %q:\n%s", w, out.String())
		}
	}
}

// Start failures that a retry meets again exit 2, the others 1.
func TestLasting(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: no such interface", ErrPreflight), true},
		{fmt.Errorf("attach xdp to s1: %w", &bpf.BusyError{Interface: "s1"}), true},
		{fmt.Errorf("open AF_XDP socket: register umem (33554432 bytes): %w", unix.ENOBUFS), true},
		{fmt.Errorf("bind s1: %w", afxdp.ErrZeroCopy), true},
		{fmt.Errorf("listen on 127.0.0.1:9478: %w", unix.EADDRINUSE), false},
		{errors.New("kernel mirror: netlink"), false},
	} {
		if got := lasting(c.err); got != c.want {
			t.Errorf("lasting(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
