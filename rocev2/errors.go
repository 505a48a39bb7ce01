package rocev2

import "errors"

// Errors returned by the builders. They are sentinels so that callers on
// the packet path can test them without allocating.
var (
	ErrShortBuffer = errors.New("rocev2: buffer too short for the frame")
	ErrAddrFamily  = errors.New("rocev2: source and destination must both be IPv4 or both IPv6")
	ErrTooLong     = errors.New("rocev2: frame longer than 65535 bytes")
	ErrDCPTag      = errors.New("rocev2: a DCP packet needs a DCP tag other than 00 in its DSCP")
	ErrNetRTType   = errors.New("rocev2: unknown NetRT message type")
	ErrNotDCPData  = errors.New("rocev2: only a DCP data packet can be trimmed")
)
