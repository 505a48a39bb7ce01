#!/usr/bin/env bash
# qos-beside-tcp.sh — project issue 28, item 1, as a new user tried it:
# RoCE WRITEs beside an iperf3 TCP flow through a NetRT chain with 1 %
# loss on the core link, once without traffic classes (every frame on
# the data queue, as before) and once with `testbed up --qos` (tord's
# default profile, qos: {}: RoCE on the lossless data queue, TCP on the
# lossy one). For each it prints roceperf's result lines, iperf3's
# receiver line and torctl queues of tor1's and core's ports toward the
# lossy link, where the two flows meet. Run it as root on a quiet machine,
# under the privileged-test lock:
#
#   go build -o /tmp/qos-bin/ ./cmd/testbed ./cmd/tord ./cmd/roceperf ./cmd/torctl
#   flock /tmp/rocetor-privileged.lock scripts/qos-beside-tcp.sh /tmp/qos-bin
#
# It needs iperf3 in PATH. What to read: the data queue's DROPS (RoCE's
# frames refused at the queue TCP fills: some without --qos, none with
# it), roceperf's retransmissions and timeouts, both flows' rates.
set -euo pipefail
B=${1:?usage: qos-beside-tcp.sh BINDIR (testbed, tord, roceperf, torctl built there)}
P=qtb-
trap '"$B/testbed" down --prefix $P >/dev/null 2>&1 || true' EXIT
for q in "" "--qos"; do
	echo "=== testbed up chain --netrt --loss 0.01 ${q:-(no --qos)}"
	"$B/testbed" down --prefix $P >/dev/null 2>&1 || true
	"$B/testbed" up chain --prefix $P --bin "$B" --netrt --loss 0.01 $q >/dev/null
	ip netns exec ${P}h2 iperf3 -s -D -1 >/dev/null
	ip netns exec ${P}h2 "$B/roceperf" serve --dev eth0 --once >/dev/null 2>&1 &
	sleep 1
	ip netns exec ${P}h1 iperf3 -c 10.0.2.2 -t 14 >/tmp/qos-beside-tcp-iperf.log 2>&1 &
	sleep 2
	ip netns exec ${P}h1 timeout 60 "$B/roceperf" write --dev eth0 --to 10.0.2.2 --duration 8 --report-gbits | tail -6
	wait
	grep receiver /tmp/qos-beside-tcp-iperf.log || true
	ip netns exec ${P}tor1 "$B/torctl" queues core
	ip netns exec ${P}core "$B/torctl" queues tor2
done
