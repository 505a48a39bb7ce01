#!/usr/bin/env bash
# demo.sh: rocetor's switch on a namespace testbed, in one command.
#
#   h1 (10.0.1.2) ── s1 [ tord ] s2 ── h2 (10.0.2.2)
#
# Builds tord, wires three network namespaces with veth pairs, starts tord
# in the middle one (kernel forwarding off, so every packet crosses tord's
# AF_XDP workers), sends ping and a TCP stream through it, and prints what
# tord's Prometheus endpoint counted. Everything it creates is removed on
# exit, also on failure or Ctrl-C. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "demo: needs root (network namespaces, XDP): sudo $0" >&2; exit 1; }
for tool in ip ethtool ping iperf3 curl go; do
	command -v "$tool" >/dev/null || { echo "demo: $tool not found (apt-get install iproute2 ethtool iputils-ping iperf3 curl)" >&2; exit 1; }
done

tag="rt$$"
h1="$tag-h1" sw="$tag-sw" h2="$tag-h2"
tord_pid=""
cleanup() {
	[ -n "$tord_pid" ] && kill -INT "$tord_pid" 2>/dev/null && wait "$tord_pid" 2>/dev/null || true
	for n in "$h1" "$sw" "$h2"; do ip netns del "$n" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

echo "== building tord"
go build -o bin/tord ./cmd/tord

echo "== wiring h1 — sw — h2"
for n in "$h1" "$sw" "$h2"; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip link add s1 netns "$sw" type veth peer name eth0 netns "$h1"
ip link add s2 netns "$sw" type veth peer name eth0 netns "$h2"
ip -n "$h1" addr add 10.0.1.2/24 dev eth0
ip -n "$h2" addr add 10.0.2.2/24 dev eth0
ip -n "$sw" addr add 10.0.1.1/24 dev s1
ip -n "$sw" addr add 10.0.2.1/24 dev s2
for n in "$h1" "$h2"; do
	ip -n "$n" link set eth0 up
	# The hosts' stacks leave TCP/UDP checksums to the device; frames
	# that tord forwards from userspace are never completed by one.
	ip netns exec "$n" ethtool -K eth0 tx off >/dev/null
done
ip -n "$sw" link set s1 up
ip -n "$sw" link set s2 up
ip -n "$h1" route add default via 10.0.1.1
ip -n "$h2" route add default via 10.0.2.1
ip netns exec "$sw" sysctl -qw net.ipv4.ip_forward=0

echo "== starting tord on s1,s2"
ip netns exec "$sw" bin/tord --ports s1,s2 --poll adaptive --metrics-addr 127.0.0.1:9478 --admin-addr "" \
	>"/tmp/$tag-tord.log" 2>&1 &
tord_pid=$!
for _ in $(seq 50); do
	ip netns exec "$sw" curl -sf 127.0.0.1:9478/readyz >/dev/null 2>&1 && break
	kill -0 "$tord_pid" 2>/dev/null || { cat "/tmp/$tag-tord.log" >&2; exit 1; }
	sleep 0.1
done
sed 's/^/   /' "/tmp/$tag-tord.log"

echo "== ping h1 → h2 through tord (the first replies wait for neighbour resolution)"
ip netns exec "$h1" ping -c 5 -i 0.2 -W 1 10.0.2.2 | sed 's/^/   /'

echo "== TCP h1 → h2 through tord for 5 s"
ip netns exec "$h2" iperf3 -s -1 >/dev/null 2>&1 &
sleep 0.3
ip netns exec "$h1" iperf3 -c 10.0.2.2 -t 5 | grep -E "sender|receiver" | sed 's/^/   /'

echo "== what tord counted (curl 127.0.0.1:9478/metrics in the switch namespace)"
ip netns exec "$sw" curl -s 127.0.0.1:9478/metrics |
	grep -E '^rocetor_(port_(rx|tx)_(packets|bytes)_total|drops_total|queue_max_depth_bytes|stage_packets_total)' |
	grep -v ' 0$' | sed 's/^/   /'
echo "== done; namespaces and XDP programs are removed on exit"
