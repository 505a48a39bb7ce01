// Package pcap writes the frames of dataplane captures as a nanosecond
// pcap file (Ethernet link type), the format tshark, Wireshark and
// tcpdump -r read. tord's capture API and roceperf --pcap both write
// through it, so that a capture of a switch port and of a host read the
// same way; the Lua dissector in docs/ decodes what rocetor adds.
//
// It is control-plane code: it runs after the worker has stopped copying
// frames, never on the packet path.
package pcap
