#!/bin/sh
# A lossless fabric in torsim and in htsim's RoCE, side by side: two
# incasts on 100 Gbit/s 3-tier fat trees, ECMP, MTU 1024, no wire
# overhead — 15 hosts sending 1 MB to host 0 (k = 4, 16 hosts) and
# htsim's own incast_128.cm (127 hosts sending 2 MB to host 33, k = 8).
# htsim pauses an input port past 15 packets and resumes it under 12
# (its defaults); torsim runs tord's pfc section at the same levels
# (pfc: {xoff: 15KiB, xon: 12KiB}) over tord's 1 MiB queues. htsim's
# output queues are given 1,000 packets (-q 1000): at -q 100 its lossless
# queues pass their size (it reports, and does not drop) and the
# completion times move by under 1%. Each pair runs RUNS times; wall and
# user CPU times of every run go to OUT/times.txt. htsim's completion
# times change from run to run with the same seed (-seed, 13 by
# default), so its row is the median over the runs [min–max]; torsim's
# runs must give byte-identical result.json, and the script checks.
#
#   scripts/sim-vs-htsim-pfc.sh HTSIM_DATACENTER_DIR [OUT]
#
# HTSIM_DATACENTER_DIR is csg-htsim's sim/datacenter with htsim_roce
# built (github.com/Broadcom/csg-htsim; build it outside this tree).
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 HTSIM_DATACENTER_DIR [OUT]" >&2; exit 2; }
[ -x "$1/htsim_roce" ] || { echo "$0: $1 has no htsim_roce: build csg-htsim's sim/datacenter first" >&2; exit 2; }
h=$(cd "$1" && pwd)
out=${2:-results/sim-vs-htsim-pfc}
runs=${RUNS:-3}
case $runs in '' | *[!0-9]* | 0) echo "$0: RUNS=$runs: want a whole number above 0" >&2; exit 2 ;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd) # htsim writes logout.dat and idmap.txt where it runs: there
go build -o "$out/torsim" ./cmd/torsim
printf 'pfc: {xoff: 15KiB, xon: 12KiB}\n' >"$out/pfc.yaml"
python3 - "$out/incast_16.cm" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("Nodes 16\nConnections 15\n")
    for i in range(1, 16):
        f.write("%d->0 id %d start 0 size 1000000\n" % (i, i))
PY
cp "$h/connection_matrices/incast_128.cm" "$out/incast_128.cm"
: >"$out/times.txt"
for i in $(seq "$runs"); do
	for w in "16 4 5000" "128 8 40000"; do
		# shellcheck disable=SC2086
		set -- $w
		(cd "$out" && /usr/bin/time -a -o times.txt -f "htsim $1 hosts: %e s wall, %U s user, %M KB" \
			"$h/htsim_roce" -strat ecmp_host -paths 64 -nodes "$1" -q 1000 -mtu 1024 -end "$3" \
			-tm "incast_$1.cm" >"htsim-$1-$i.out")
		/usr/bin/time -a -o "$out/times.txt" -f "torsim $1 hosts: %e s wall, %U s user, %M KB" \
			"$out/torsim" --topo "fattree:k=$2" --rate 100G --workload file --traffic "$out/incast_$1.cm" \
			--overhead 0 --mtu 1024 --switch "$out/pfc.yaml" --quiet --out "$out/torsim-$1-$i" >/dev/null 2>&1
		python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
a.pop("command"); b.pop("command")  # names its --out
sys.exit(a != b and "torsim: two runs differ")' "$out/torsim-$1-1/result.json" "$out/torsim-$1-$i/result.json"
		uptime >>"$out/times.txt"
	done
done
python3 - "$out" "$runs" <<'PY'
import json, math, re, sys
out, runs = sys.argv[1], int(sys.argv[2])
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, math.ceil(p * len(xs)) - 1)]
def med(xs):
    xs = sorted(xs)
    return "%.1f" % xs[len(xs) // 2] + (" [%.1f–%.1f]" % (xs[0], xs[-1]) if len(xs) > 1 else "")
print("| workload | simulator | flows done | p50 FCT (µs) | p99 FCT (µs) | last flow (µs) | drops | retransmissions |")
print("| --- | --- | --: | --: | --: | --: | --: | --: |")
for n in ["16", "128"]:
    p50, p99, last, done, rtx = [], [], [], [], set()
    for i in range(1, runs + 1):
        t = open(f"{out}/htsim-{n}-{i}.out").read()
        f = [float(m.group(1)) for m in re.finditer(r"finished at ([0-9.]+)", t)]
        p50.append(pct(f, .5)); p99.append(pct(f, .99)); last.append(max(f)); done.append(len(f))
        rtx.add(re.search(r"Rtx: (\d+)", t).group(1))
    print("| incast, %s hosts | htsim (%d runs) | %s | %s | %s | %s | – | %s |" % (n, runs, "/".join(sorted(set(map(str, done)))),
        med(p50), med(p99), med(last), "/".join(sorted(rtx))))
    d = json.load(open(f"{out}/torsim-{n}-1/result.json"))
    a = d["fct_all"]
    print("| incast, %s hosts | torsim (%d runs, identical) | %d | %.1f | %.1f | %.1f | %d | %d |" % (n, runs, d["completed"], a["p50_fct_ns"] / 1e3,
        a["p99_fct_ns"] / 1e3, d["sim_time_ns"] / 1e3, sum(d["switch_drops"].values()), d["host_counters"].get("Retransmits", 0)))
PY
cat "$out/times.txt"
