package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where ip(8) keeps named network namespaces.
const netnsDir = "/run/netns"

// cmdTimeout bounds every helper command (ip, sysctl, ethtool): they
// return in milliseconds, and one that hangs must not hang testbed.
const cmdTimeout = 20 * time.Second

// runCommand runs c and returns its combined output; the error names the
// command and carries its output.
func runCommand(ctx context.Context, c Command) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c[0], c[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", c, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// inNetns runs f on an OS thread that has entered the named namespace.
// Sockets f creates belong to that namespace and may be used from any
// goroutine afterwards. The thread is never handed back to the Go
// scheduler: it exits with its goroutine, so nothing else ever runs in
// the namespace by accident.
func inNetns(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: see above
		if unix.Gettid() == unix.Getpid() {
			// The main thread never exits (the runtime parks it), so it
			// would stay in the namespace, and /proc/<pid>/net, which
			// follows it, with it. Hold it and use another thread.
			err := inNetns(name, f)
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		h, err := netns.GetFromName(name)
		if err != nil {
			errc <- fmt.Errorf("open netns %s: %w", name, err)
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// netnsClient returns an HTTP client whose connections are made inside
// the named namespace, where tord's metrics listen on loopback.
func netnsClient(name string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = inNetns(name, func() error {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
}

// ListNetns returns the named namespaces whose names start with prefix,
// sorted.
func ListNetns(prefix string) ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list network namespaces: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// nsID identifies a network namespace: the device and inode of its nsfs
// file.
type nsID struct{ dev, ino uint64 }

func statNS(path string) (nsID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nsID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nsID{}, fmt.Errorf("stat %s: no inode", path)
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// pidsIn returns the processes, other than this one, whose network
// namespace is one of the named ones, by namespace. This is how down
// finds a tord (or roceperf) that a crashed testbed left behind: by
// where it runs, not by its name.
func pidsIn(names []string) (map[string][]int, error) {
	ids := map[nsID]string{}
	for _, n := range names {
		id, err := statNS(filepath.Join(netnsDir, n))
		if err != nil {
			continue // gone already
		}
		ids[id] = n
	}
	out := map[string][]int{}
	if len(ids) == 0 {
		return out, nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		id, err := statNS(filepath.Join("/proc", e.Name(), "ns/net"))
		if err != nil {
			continue // exited, or a kernel thread
		}
		if n, ok := ids[id]; ok && Alive(pid) {
			out[n] = append(out[n], pid)
		}
	}
	return out, nil
}

// inNamespaces reports whether pid runs in one of the named namespaces.
func inNamespaces(pid int, names []string) bool {
	id, err := statNS(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return false
	}
	for _, n := range names {
		if nid, err := statNS(filepath.Join(netnsDir, n)); err == nil && nid == id {
			return true
		}
	}
	return false
}

// Alive reports whether pid exists and is not a zombie (a zombie has
// exited; in a container its reaper may be slow or absent).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// terminate sends SIGTERM to pids, waits up to grace for them to exit,
// then SIGKILLs the rest and waits up to two seconds more. It returns
// the pids still alive after that.
func terminate(pids []int, grace time.Duration) []int {
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGTERM)
	}
	left := waitGone(pids, grace)
	if len(left) == 0 {
		return nil
	}
	for _, p := range left {
		syscall.Kill(p, syscall.SIGKILL)
	}
	return waitGone(left, 2*time.Second)
}

// waitGone polls until every pid has exited or timeout passes, and
// returns those still alive.
func waitGone(pids []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, p := range pids {
			if Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond) // poll interval within the bounded wait
	}
}
