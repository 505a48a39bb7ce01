// Package netnstest holds what the privileged tests of namespace
// testbeds share: a skip with the reason when they cannot run, a
// namespace prefix of their own, built binaries, and a clean-up that
// removes whatever a test left.
package netnstest
