// Package nictest runs software RNIC endpoints in memory for tests: two
// endpoints, each a dataplane.Worker with one MemPort, joined by a Link
// per direction that moves what one port transmits into the other's
// Inject after a delay, and may drop, duplicate or reorder frames on the
// way. One injected clock drives both workers, so every timeout in a test
// is exact and no test depends on the machine's speed. Nothing on the
// path allocates, so the harness also serves allocation tests and
// benchmarks.
//
// Fill and Check put a position-dependent pattern in a buffer and verify
// it: what a WRITE, SEND or READ delivered is intact and in place.
package nictest
