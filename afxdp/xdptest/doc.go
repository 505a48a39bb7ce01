// Package xdptest builds the throw-away network namespaces, veth pairs and
// AF_PACKET endpoints that privileged AF_XDP and XDP tests run on.
//
// Everything it creates is removed in t.Cleanup, also when the test fails
// half way. Names carry the process ID and a counter, so concurrent test
// binaries (other packages, other engineers) never collide. It shells out
// to iproute2's ip(8) for set-up, which tests may do; the code under test
// uses no such thing.
package xdptest
