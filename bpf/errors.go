package bpf

import "errors"

// Sentinel errors for what callers test with errors.Is; each comes wrapped
// with the interface, queue or address concerned.
var (
	// ErrBusy: another XDP program is attached to the interface. The
	// error is a *BusyError naming it and how to remove it.
	ErrBusy = errors.New("another xdp program is attached")

	// ErrNoNative: native (driver) mode was required but the driver has
	// no XDP support.
	ErrNoNative = errors.New("driver has no native xdp")

	// ErrAttached: the Program is already attached; one Program serves
	// one interface.
	ErrAttached = errors.New("program already attached")

	// ErrQueue: a queue index outside the XSKMAP.
	ErrQueue = errors.New("queue index outside the xsk map")

	// ErrAddr: an invalid (zero) netip.Addr.
	ErrAddr = errors.New("invalid address")
)
