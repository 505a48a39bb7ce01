// Package metrics exports the dataplane's counters to Prometheus. Workers
// never touch Prometheus: each publishes a Snapshot of its plain counters
// about once a millisecond, and the Collector sums the snapshots of all
// workers at scrape time. Every metric has the prefix "rocetor_", uses base
// units (bytes, seconds) and labels by port, queue, reason, stage or
// worker, never by flow.
package metrics
