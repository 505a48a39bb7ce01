package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// serveFake serves runs on a loopback listener with a fake device until
// the test ends and returns its address.
func serveFake(t *testing.T, n *FakeNet, o ServerOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Timeout = max(o.Timeout, 5*time.Second)
	o.MaxMR = max(o.MaxMR, 64<<20)
	sv := NewServer(o, n.Device(), io.Discard, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return ln.Addr().String()
}

// TestRxDepthPlan: the server posts a SEND run's -r receives per QP,
// separately from the client's send depth (-t); without it at least
// twice the depth.
func TestRxDepthPlan(t *testing.T) {
	sv := &Server{o: ServerOptions{MaxMR: 64 << 20}}
	h := hello{Version: protoVersion, Op: "send", Transport: "gbn", QPs: 2, Size: 4096, Count: 100, MTU: 1024,
		Depth: 8, TimeoutMS: 1000, QP: make([]qpWire, 2)}
	p, err := sv.planRun(h)
	if err != nil || p.rq < 16 {
		t.Errorf("default: %d receives per QP, %v; want at least 16", p.rq, err)
	}
	h.RxDepth = 24
	if p, err := sv.planRun(h); err != nil || p.rq != 24 || p.mem != 2*24*4096 {
		t.Errorf("rx depth 24: %d receives per QP, %d B, %v", p.rq, p.mem, err)
	}
	h.RxDepth = 5000
	if _, err := sv.planRun(h); err == nil {
		t.Error("rx depth 5000 accepted")
	}
}

// TestServerRefusesTransport: a client this roceperf would not send, with
// an unknown transport, has its hello refused with an error line that
// says so.
func TestServerRefusesTransport(t *testing.T) {
	// A client this roceperf would not send: an unknown transport.
	addr := serveFake(t, NewFakeNet(), ServerOptions{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := hello{Type: "hello", Version: protoVersion, Op: "write", Transport: "tcp", QPs: 1, Size: 1, Count: 1,
		MTU: 1024, Depth: 1, TimeoutMS: 1000, QP: []qpWire{{QPN: 0x100, PSN: 1, IP: "192.0.2.2", MAC: "02:00:00:00:00:02"}}}
	b, _ := json.Marshal(h)
	c.Write(append(b, '\n'))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m errorMsg
	if json.Unmarshal([]byte(reply), &m); m.Type != "error" || !strings.Contains(m.Error, `unknown transport "tcp"`) {
		t.Errorf("reply %q", reply)
	}
}
