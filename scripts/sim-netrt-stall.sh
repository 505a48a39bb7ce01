#!/bin/sh
# NetRT's 5 %, 1 MB netrt-loss cell in the simulator with a switch off
# its CPU (--stall): tor1, core or tor2 paused 1–8 ms of every 50 ms,
# exponential or fixed pauses, and tor1 with fixed pauses of 4–20 ms.
# One line per cell: waits (flows that fell back to the hosts), the
# hosts' timeouts and end-to-end retransmissions. Deterministic: the
# same tree gives the same cells on any machine.
#
#   scripts/sim-netrt-stall.sh [OUT]   (default docs/results/netrt-stall)
set -eu
[ $# -le 1 ] || { echo "usage: $0 [OUT]" >&2; exit 2; }
out=${1:-docs/results/netrt-stall}
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/torsim" ./cmd/torsim
cell() { # NAME [STALL]
	name=$1
	shift
	"$bin/torsim" run netrt-loss --losses 0.05 --sizes 1000000 ${1:+--stall "$1"} --json "$out/$name.json" >/dev/null
	python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))[0]
print("%-26s waits %3d  timeouts %3d  e2e retx %5d" % (sys.argv[2], c["waits"], c["netrt"]["timeouts"], c["netrt"]["e2e_retx"]))
PY
}
cell none
for node in tor1 core tor2; do
	for d in 1 2 3 5 8; do
		for kind in exp fixed; do
			cell "$node-${d}ms-$kind" "$node:${d}ms/50ms:$kind"
		done
	done
done
for d in 4 5 6 7 7.5 8 9 10 12 16 20; do
	cell "sweep-tor1-${d}ms-fixed" "tor1:${d}ms/50ms:fixed"
done
