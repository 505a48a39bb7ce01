package main

import (
	"bytes"
	"strings"
	"testing"

	"rocetor/rocev2"
)

// TestINT: a frame with an INT request tail shows the tail and its
// records, an ACK with an echo tail shows "echo", and the ICRC of both
// stays ok (the tail is outside the datagram).
func TestINT(t *testing.T) {
	f := build(t, writeFirst())
	end := len(f)
	f = append(f, make([]byte, rocev2.INTLen(2))...)
	rocev2.PutINT(f[end:], 2)
	tl, _ := rocev2.FindINT(f, end)
	tl.Push(rocev2.INTHop{TS: 5, QLen: 6, TxBytes: 7, RateMbps: 8})
	echo := bytes.Clone(f)
	echo[end+2] |= 1
	lines, _, code := rocedump("-r", writeCapture(t, [][]byte{f, echo}, false), "-json")
	objs := decodeLines(t, lines)
	if code != 0 || len(objs) != 2 {
		t.Fatalf("exit %d, %d lines", code, len(objs))
	}
	hops, _ := objs[0]["int_hops"].([]any)
	if objs[0]["int"] != "request" || objs[0]["int_max"] != 2.0 || len(hops) != 1 || objs[0]["icrc_ok"] != true || objs[1]["int"] != "echo" {
		t.Fatalf("json: %v / %v", objs[0], objs[1])
	}
	if h := hops[0].(map[string]any); h["ts_ns"] != 5.0 || h["qlen"] != 6.0 || h["tx_bytes"] != 7.0 || h["rate_mbps"] != 8.0 {
		t.Errorf("record %v", h)
	}
	text, _, _ := rocedump("-r", writeCapture(t, [][]byte{f}, false))
	if len(text) != 1 || !strings.Contains(text[0], " int=request/2 [ts=5 q=6 tx=7 rate=8M]") {
		t.Errorf("text: %q", text)
	}
}
