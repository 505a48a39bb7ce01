// Package psn provides the sequence numbers the project compares across
// wrap-around: the 24-bit RoCEv2 packet sequence number and the 17-bit link
// sequence (16-bit number plus era bit) of the link-retransmission shim.
//
// Both use serial-number arithmetic (RFC 1982): a is before b when the
// forward distance from a to b is less than half the space. Comparisons are
// meaningful only between numbers less than half the space apart, which is
// what the IBA requires of RC windows (2^23 PSNs) and what Protego requires
// of link sequences (§3.5 of seed 003: "not more than N/2 apart").
//
// Values are plain integers: the zero value is PSN 0, and both types are safe
// to copy and to use from any goroutine.
package psn
