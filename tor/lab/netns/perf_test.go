package netns

import (
	"net"
	"os"
	"strings"
	"testing"

	"rocetor/tor/lab"
)

func TestLastJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"connecting\n{\"a\":1}\n", `{"a":1}`},
		{"{\"a\":1}\nnoise\n{\"b\":2}\n", `{"b":2}`},
		{"{\n  \"a\": 1\n}\n", "{\n  \"a\": 1\n}"},
		{"no json here\n", ""},
	} {
		if got := string(lastJSON([]byte(c.in))); got != c.want {
			t.Errorf("lastJSON(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if !listening(os.Getpid(), port) {
		t.Errorf("listening(self, %d) = false with a listener open", port)
	}
	ln.Close()
	if listening(os.Getpid(), port) {
		t.Errorf("listening(self, %d) = true after close", port)
	}
}

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("Alive(self) = false")
	}
	if Alive(1 << 30) {
		t.Error("Alive(no such pid) = true")
	}
}

// TestServerLine: a round's server prints a line per client; each
// transfer takes the one from its sender's address.
func TestServerLine(t *testing.T) {
	out := []byte(`{"run":1,"round":1,"clients":2,"client":"10.0.2.2:40000","messages":5}
not json
{"run":2,"round":1,"clients":2,"client":"10.0.1.2:40001","messages":7}
`)
	if got := string(serverLine(out, "10.0.1.2")); !strings.Contains(got, `"messages":7`) {
		t.Errorf("h1's line %q", got)
	}
	if got := serverLine(out, "10.0.1.20"); got != nil {
		t.Errorf("10.0.1.20 matched %q", got)
	}
}

// A transfer's congestion control becomes roceperf's flags, the
// --dcqcn- ones in name order.
func TestCCArgs(t *testing.T) {
	dc := lab.Transfer{CC: "dcqcn", LineRate: "200M", DCQCN: map[string]string{"rpg-time-reset": "300", "rpg-ai-rate": "5"}}
	if got := strings.Join(ccArgs(dc), " "); got != "--cc dcqcn --line-rate 200M --dcqcn-rpg-ai-rate=5 --dcqcn-rpg-time-reset=300" {
		t.Errorf("roceperf's DCQCN flags: %q", got)
	}
	if got := strings.Join(ccArgs(lab.Transfer{CC: "none"}), " "); got != "--cc none" {
		t.Errorf("roceperf's flags without DCQCN: %q", got)
	}
}
