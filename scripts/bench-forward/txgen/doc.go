// Command txgen is scripts/bench-forward.sh's generator when DPDK's
// dpdk-testpmd is not installed, or for --queues > 1: it sends the frames testpmd's txonly mode
// sends (UDP from --src-ip to --dst-ip, both ports 4791 with --roce, so
// that every frame is a RoCEv2 packet with a zero BTH: an RC SEND First,
// PSN 0, QP 0) as fast as one AF_XDP socket in copy mode can, until
// SIGINT or SIGTERM. It counts nothing itself: the script reads the
// interface's tx_packets, as it does for testpmd.
//
// Like testpmd on net_af_xdp it keeps a UMEM of ready-made frames and
// only moves descriptors: a completed frame goes straight back on the tx
// ring, its bytes untouched. With --queues N it sends on the interface's
// first N tx queues in turn, one socket each on a shared UMEM; veth
// delivers what tx queue q sends to its peer's rx queue q, so a
// multi-queue veth's every rx queue gets an equal share.
//
//	txgen --iface gen0 --dst-mac 02:00:00:00:00:02 --size 64 --roce [--queues 2]
package main
