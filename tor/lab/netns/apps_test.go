package netns

import (
	"math"
	"testing"
)

func TestParsePing(t *testing.T) {
	out := []byte(`PING 10.0.4.2 (10.0.4.2) 56(84) bytes of data.
64 bytes from 10.0.4.2: icmp_seq=1 ttl=61 time=0.250 ms
64 bytes from 10.0.4.2: icmp_seq=2 ttl=61 time=1.50 ms
64 bytes from 10.0.4.2: icmp_seq=2 ttl=61 time=1.60 ms (DUP!)
64 bytes from 10.0.4.2: icmp_seq=4 ttl=61 time=0.500 ms

--- 10.0.4.2 ping statistics ---
4 packets transmitted, 3 received, +1 duplicates, 25% packet loss, time 150ms
`)
	p := ParsePing(out)
	if p.Sent != 4 || len(p.RTTus) != 3 || p.RTTus[1] != 1500 {
		t.Fatalf("sent %d, rtts %v; want 4 sent, 3 replies, the second 1500 µs", p.Sent, p.RTTus)
	}
	if q := p.Quantile(0.5); q != 500 {
		t.Errorf("p50 %v µs, want 500", q)
	}
	if q := p.Quantile(0.99); q != 1500 {
		t.Errorf("p99 %v µs, want 1500", q)
	}
	if l := p.Lost(); math.Abs(l-0.25) > 1e-9 {
		t.Errorf("lost %v, want 0.25", l)
	}
}

func TestParseIperf3(t *testing.T) {
	out := []byte(`{"start":{"timestamp":{"time":"Sun, 29 Nov 2026 01:00:00 GMT","timesecs":1795741200}},
"end":{"sum_sent":{"seconds":8,"bytes":600000000,"bits_per_second":6e8,"retransmits":42},
"sum_received":{"seconds":8.01,"bytes":598000000,"bits_per_second":5.97e8}}}`)
	r, err := ParseIperf3(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Gbps != 0.597 || r.Retransmits != 42 || r.Bytes != 598000000 || r.Start.Unix() != 1795741200 || r.End.Sub(r.Start).Seconds() != 8.01 {
		t.Errorf("got %+v", r)
	}
	if _, err := ParseIperf3([]byte(`{"start":{},"end":{},"error":"unable to connect to server"}`)); err == nil {
		t.Error("iperf3's error not returned")
	}
}
