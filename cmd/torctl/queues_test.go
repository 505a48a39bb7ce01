package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"rocetor/cmd/tord/api"
)

// TestQueuesClasses: torctl queues shows each queue's traffic classes,
// scheduler and PFC priority, and "-" for a queue no class maps to.
func TestQueuesClasses(t *testing.T) {
	qs := []api.Queue{
		{Port: "up1", Queue: "control"},
		{Port: "up1", Queue: "data", Enqueued: 3, QoS: &api.QueueQoS{TrafficClasses: []int{3}, DSCPs: []int{26}, Scheduler: "dwrr", Weight: 50, PFCPriority: 3}},
		{Port: "up1", Queue: "cnp", Enqueued: 2, QoS: &api.QueueQoS{TrafficClasses: []int{6}, DSCPs: []int{48}, Scheduler: "strict", PFCPriority: -1}},
		{Port: "up1", Queue: "lossy", Enqueued: 1, QoS: &api.QueueQoS{TrafficClasses: []int{0, 1}, Scheduler: "dwrr", Weight: 25, PFCPriority: -1}},
	}
	out := torctlAgainst(t, "/api/v1/queues", qs, "queues")
	for _, re := range []string{
		`(?m)^PORT\s+QUEUE\s+TC\s+SCHED\s+PFC\s`,
		`(?m)^up1\s+control\s+-\s+-\s+-\s`,
		`(?m)^up1\s+data\s+3\s+dwrr:50\s+3\s`,
		`(?m)^up1\s+cnp\s+6\s+strict\s+lossy\s`,
		`(?m)^up1\s+lossy\s+0,1\s+dwrr:25\s+lossy\s`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no %s in\n%s", re, out)
		}
	}
}

// torctlAgainst runs torctl args against an admin API that answers path
// with v as JSON, and returns what torctl printed.
func torctlAgainst(t *testing.T, path string, v any, args ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(v)
	}))
	defer srv.Close()
	var out, errs bytes.Buffer
	if code := run(append([]string{"--admin", strings.TrimPrefix(srv.URL, "http://")}, args...), &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	return out.String()
}
