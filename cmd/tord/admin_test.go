package main

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// A remote admin listener needs a token, and then every request must
// carry it; a loopback one without a token answers anyone local.
func TestAdminToken(t *testing.T) {
	c := DefaultConfig()
	c.Ports = []string{"a", "b"}
	c.AdminAddr = "0.0.0.0:9479"
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "admin_token_file") {
		t.Fatalf("remote admin without a token: %v", err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("short\n"), 0o600)
	c.AdminTokenFile = tok
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "16 characters") {
		t.Fatalf("short token: %v", err)
	}
	os.WriteFile(tok, []byte("0123456789abcdef0123\nignored\n"), 0o600)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := newAdmin(c, &Switch{}, zap.NewAtomicLevel(), zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := a.handler()
	for _, c := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer wrong", 401}, {"0123456789abcdef0123", 401}, {"Bearer 0123456789abcdef0123", 200}} {
		for _, path := range []string{"/api/v1/status", "/debug/pprof/"} {
			req := httptest.NewRequest("GET", path, nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.code {
				t.Errorf("GET %s with %q: %d, want %d", path, c.auth, rec.Code, c.code)
			}
		}
	}
}

// Bad requests get a JSON error naming what is wrong, and change nothing.
func TestAdminErrors(t *testing.T) {
	c := DefaultConfig()
	c.Ports = []string{"a", "b"}
	a, _ := newAdmin(c, &Switch{}, zap.NewAtomicLevel(), zaptest.NewLogger(t), nil)
	h := a.handler()
	for _, r := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/api/v1/nothing", "", 404, "no such endpoint"},
		{"POST", "/api/v1/status", "", 404, "no such endpoint: POST /api/v1/status"},
		{"GET", "/api/v1/queues?port=zz", "", 404, `no port "zz"`},
		{"POST", "/api/v1/stages/impair/ports/a?state=off", "", 404, `no stage "impair"`},
		{"POST", "/api/v1/stages/fwd/ports/a?state=off", "", 400, "cannot be switched per port"},
		{"GET", "/api/v1/flows", "", 404, "netrt is not configured"},
		{"GET", "/api/v1/llr", "", 404, "llr is not configured"},
		{"PUT", "/api/v1/params", `{"log_level":"loud"}`, 400, "log_level"},
		{"PUT", "/api/v1/params", `{"rate":"1G"}`, 400, "unknown field"},
		{"POST", "/api/v1/capture?port=zz", "", 404, `no port "zz"`},
		{"POST", "/api/v1/capture?port=a&point=ingress", "", 400, "capture point"},
		{"POST", "/api/v1/capture?port=a&count=0", "", 400, "frames"},
		{"POST", "/api/v1/capture?port=a&stage=nope", "", 400, "not in the pipeline"},
		{"POST", "/api/v1/capture?port=a&timeout=1h", "", 400, "timeout"},
		{"POST", "/api/v1/reload", "", 400, "not available"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(r.method, r.path, strings.NewReader(r.body)))
		var e struct{ Error string }
		json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != r.code || !strings.Contains(e.Error, r.want) {
			t.Errorf("%s %s: %d %q, want %d and %q", r.method, r.path, rec.Code, e.Error, r.code, r.want)
		}
	}
	if a.level.Level() != zap.InfoLevel {
		t.Errorf("log level changed to %v by a bad request", a.level.Level())
	}
}

// Only log_level and impair may change without a restart.
func TestChangedFields(t *testing.T) {
	a, b := DefaultConfig(), DefaultConfig()
	b.LogLevel, b.Workers, b.File = "debug", 2, "elsewhere.yaml"
	b.XDP.Frames = 4096
	got := changedFields(&a, &b)
	if strings.Join(got, ",") != "workers,log_level,xdp" {
		t.Errorf("changed %v", got)
	}
}
