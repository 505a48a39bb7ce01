// Command roceperf is a perftest-style load and flow-completion-time tool
// for RoCEv2 over rocetor's software RNIC (package nic): it runs a
// nic.Endpoint on a host interface through AF_XDP (package nic/host), so
// two hosts without RDMA NICs — or two network namespaces — exchange
// real RoCEv2 RC traffic, through tord or any switch. The command parses
// its flags into nic/perf's options and runs nic/perf's client or
// server; transports and congestion controls are nic/stack's, by name.
//
// Usage:
//
//	roceperf serve --dev IFACE [--listen ADDR:PORT] [--once] [--clients 1] [--timeout 10s] [--max-mr 64MiB] [--rate 0]
//	        [--metrics ADDR:PORT] [--pcap FILE [--snaplen 2176]]
//	roceperf write|send|read[-bw] --dev IFACE --to HOST[:PORT] [--size 64KiB] [--count 5000 | -D SECONDS] [-a] [-b]
//	        [--qps 1] [--transport gbn|dcp|irn|fasr] [--mtu 1024] [--depth 0] [--rx-depth 0] [--rate 0] [--rto 0]
//	        [--timeout 10s] [--json] [--report-gbits] [--cpu-util] [--pcap FILE [--snaplen 2176]]
//	        [--cc none|fixed|dcqcn|timely|hpcc] [--line-rate RATE] [--dcqcn-PARAMETER VALUE ...]
//	        [--timely-PARAMETER VALUE ...] [--hpcc-PARAMETER VALUE ...]
//	roceperf write-lat|send-lat|read-lat --dev IFACE --to HOST[:PORT] [--size 2] [--count 1000 | -D SECONDS] [-a] ...
//
// perftest's one-letter flags are aliases (-s, -n, -q, -m, -t, -r, -D,
// -a, -b, -p, -F) and the server may come last, as perftest takes it; the
// bandwidth tests print perftest's table (#bytes, #iterations, BW peak,
// BW average, MsgRate) and the latency tests, ping-pong as perftest's,
// its latency columns (t_min … 99.9% percentile), then roceperf's own
// lines. docs/roceperf.md maps every perftest flag, says which cannot
// map (no verbs device, no GID index) and how each figure is computed.
//
// The server listens on TCP port 18515 (perftest's) for clients; each run
// is one TCP connection over which both sides exchange their QPs and
// memory regions, then the client moves --count messages of --size bytes
// with RDMA WRITE, SEND or READ, spread round robin over --qps QPs, with
// up to --depth messages in flight per QP, posting the next as each
// completes. The payload of every message is a pattern of its number,
// checked end to end: the server checks what WRITE and SEND placed, the
// client what READ returned. docs/roceperf.md describes the exchange
// byte by byte, the output, and what a testbed needs to know.
//
// Flags:
//
//	--dev IFACE      the interface to run the endpoint on (XDP in endpoint
//	                 mode plus one AF_XDP socket on rx queue 0; the
//	                 interface must have one rx queue)
//	--to HOST[:PORT] the server (port 18515 unless given; [v6]:port)
//	--size BYTES     message size, 1 B to 1 GiB (KiB/MiB/GiB suffixes)
//	--count N        messages in all
//	--qps Q          QPs (1 to 8192); message i goes on QP i mod Q
//	--transport T    loss recovery of both ends: gbn, dcp (nic/dcp:
//	                 WRITE and SEND; the report adds a "dcp" object of
//	                 its counters), or irn (nic/irn: selective repeat
//	                 with BDP-FC; WRITE, SEND and READ; the report adds
//	                 an "irn" object of its counters), or fasr (nic/fasr:
//	                 selective retransmission with fast and slow paths
//	                 and a shared SR pool; WRITE, SEND and READ; a "fasr"
//	                 object)
//	--mtu M          path MTU: 256, 512, 1024 or 2048 (the interface MTU
//	                 must carry M plus about 100 bytes of headers)
//	--depth D        messages in flight per QP; 0 covers 256 KiB (two
//	                 Go-Back-N windows) per QP, at least 2 and at most 64
//	                 messages, and at most 16 MiB over all QPs
//	--rate R         pace the endpoint to R bit/s (K/M/G suffixes; 0: as
//	                 fast as the socket takes frames); serve's paces READ
//	                 responses
//	--rto D          first retransmission timeout of both ends (0: the
//	                 transport's: 16 ms for gbn and fasr, 64 ms for dcp; for irn
//	                 its RTO_high, 16 ms, with RTO_low 8 ms or --rto if
//	                 shorter)
//	--timeout D      connect, each protocol step, neighbour resolution, and
//	                 the longest wait for a completion (serve: for the
//	                 client's first line)
//	--json           one JSON object instead of the table
//	--cc C           congestion control of both ends: none, fixed (every
//	                 QP paced at --line-rate), dcqcn (nic/cc.DCQCN:
//	                 CNPs on CE marks, rate cuts and increases per QP)
//	                 timely (nic/cc.Timely: the rate follows the RTT
//	                 of each 16 KiB segment; not with --transport dcp)
//	                 or hpcc (nic/cc.HPCC: the rate follows the INT the
//	                 switches stamp into requests, tord's int: section);
//	                 the report adds ce_received, cnps_sent,
//	                 cnps_received and a "cc" object with rate_cuts and
//	                 the QPs' rates (min, mean, final)
//	--line-rate R    the rate DCQCN, TIMELY or HPCC starts QPs at (fixed: holds
//	                 them to); default --rate
//	--dcqcn-P V      DCQCN parameter P, ConnectX's name with dashes, units
//	                 and default: --dcqcn-rpg-time-reset 300 (µs),
//	                 --dcqcn-dce-tcp-rtt 1 (µs), --dcqcn-rpg-ai-rate 5
//	                 (Mb/s), … (roceperf write -h lists all sixteen)
//	--timely-P V     TIMELY parameter P with dashes, the paper's
//	                 defaults: --timely-t-low 50 (µs), --timely-t-high
//	                 500 (µs), --timely-beta 0.8, … (roceperf write -h
//	                 lists all ten)
//	--hpcc-P V       HPCC parameter P: --hpcc-eta 0.95, --hpcc-max-stage
//	                 5, --hpcc-ai 0 (Mb/s; 0: line rate / 2500),
//	                 --hpcc-base-rtt 10 (µs), --hpcc-int-hops 5,
//	                 --hpcc-fast-react true
//	--duration, -D S run S seconds instead of --count messages
//	--all, -a        every size from 2 B to 8 MiB, a run each
//	--bidirectional, -b  the server sends the same messages back at once
//	                 (nic/perf, bidir.go); the table sums both ways
//	--rx-depth, -r R receives the server posts per QP for SEND
//	--report-gbits   the table in Gb/s instead of MB/s (2^20 B)
//	--cpu-util       the client process's CPU over the run
//	--pcap FILE      write every frame the endpoint sends and receives
//	                 (AF_XDP bypasses tcpdump), nanosecond pcap, at most
//	                 64 MiB of frames; --snaplen bytes of each
//	--listen ADDR    (serve) listen address, default :18515
//	--once           (serve) serve one run, exit 0 if it verified, else 1
//	--clients N      (serve) serve up to N clients at once on one
//	                 endpoint, each with its own QPs and region (nic/perf, round.go)
//	--metrics ADDR   (serve) Prometheus metrics on http://ADDR/metrics
//	--max-mr SIZE    (serve) memory for the region a run writes or reads;
//	                 a WRITE run larger than this is verified on its last
//	                 max-mr bytes
//
// The client reports messages, bytes, goodput (payload bits over the time
// from the first post to the last completion), the flow completion time
// of each message from its post to its completion (p50, p99, p99.9, mean,
// max), and its endpoint's retransmitted packets, timeouts, NAKs and
// packets; with --json, one object:
//
//	{"transport":"gbn","op":"write","size":4096,"count":200,"qps":4,
//	 "messages":200,"bytes":819200,"duration_s":0.004,"goodput_gbps":1.6,
//	 "fct_us":{"p50":962.2,"p99":2454.9,"p999":2459.1,"p9999":2459.1,"mean":1239.8,"max":2459.1},
//	 "retx_packets":0,"timeouts":0,"naks_received":0,"naks_sent":0,
//	 "packets_sent":800,"packets_received":62,"verified_bytes":819200,
//	 "corrupt":0,"depth":64,"mtu":1024,"server":{...}}
//
// serve logs to stderr and prints one JSON object per run on stdout.
//
// Exit codes: 0 when every message completed and verified; 1 on a
// runtime failure (peer unreachable or silent, retry exhaustion, data
// corruption, interrupted); 2 on bad flags. SIGINT and SIGTERM stop a
// run and detach the XDP program; a server so stopped between runs
// exits 0.
package main
