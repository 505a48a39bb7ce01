// Command rocedump prints one line per frame of a capture file or a live
// interface, as rocetor's switch sees it: each frame goes through
// rocev2.Classifier with ICRC verification, so a frame the switch would
// drop shows here with the drop reason it would count. It decodes the
// project's own formats — DCP headers, NetRT messages, the link shim —
// and PFC and PAUSE frames, and lists every other frame by kind.
//
// Usage:
//
//	rocedump -r capture.pcap   # pcap or pcapng, told apart by magic
//	rocedump -i eth0 -c 100    # live, via AF_PACKET; SIGINT ends it
//
// Flags:
//
//	-r FILE  read a pcap or pcapng file (Ethernet link type)
//	-i IFACE capture on an interface (needs CAP_NET_RAW)
//	-c N     stop after N frames
//	-json    one JSON object per line instead of text
//	-dcp     read DSCP tags as DCP (rocev2.Classifier.DCP), for DCP fabrics
//
// A text line looks like
//
//	1 0.000000 10.0.0.1:49170 > 10.0.0.2 RC_RDMA_WRITE_FIRST qp=0x000012 psn=100 len=13 icrc=ok va=0x1000 rkey=0x77 dlen=8192
//
// with the frame's number, the seconds since the first frame, and the
// fields the frame has. A JSON line has the same fields under the names
// of the frameInfo type (frame, kind, reason, opcode, opcode_name, dqpn,
// psn, src, dst, icrc_ok, msn, epsn, bitmap, link_seq, pfc_times, …);
// icrc_ok is null for frames that carry no checked ICRC. A RoCEv2 frame
// with an INT tail after its IP datagram (HPCC's in-band telemetry,
// rocev2/int.go) shows it as "int=request/5 [ts=… q=… tx=… rate=…M] …"
// (or echo, or malformed); in JSON as int, int_max and int_hops.
//
// rocedump exits 0 when the input ends (or -c is reached, or SIGINT
// arrives), 1 on an I/O error and 2 on bad flags.
package main
