#!/bin/sh
# dcp-loss in the fabric simulator at the testbed's parameters: the
# chain at 1 Gbit/s, 800 WRITEs of 64 KiB at a depth of 8, random loss on
# both directions of core's port toward tor2, as tor/lab's dcp-loss
# configures it: the egress rule trims the DCP data it picks to
# header-only packets, the ingress rule (what h2 sends back:
# header-only packets, ACKs, NAKs) destroys what it picks; DCP runs on
# switches that parse DCP headers (dcp: true, which torsim sets for DCP
# hosts) and do not trim for depth, GBN on plain ones. Every cell runs
# with SEEDS, in two timings:
#
#   link     the links alone: 1 µs per link, hosts at the link rate
#   testbed  the testbed's timing: 37 µs per link (a ToR-to-ToR round
#            trip of about 300 µs, docs/testbed.md) and hosts that send
#            at 850 Mbit/s, as the testbed's CPU-bound endpoints do
#
# and the medians (with the range) are set beside the testbed's record.
#
#   scripts/sim-dcp-loss.sh [OUT] [TESTBED_JSON...]
set -eu
out=${1:-results/sim-dcp-loss}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- docs/results/dcp-loss-4.json docs/results/dcp-loss-5.json
refs="$*"
seeds=${SEEDS:-1 2 3 4 5}
mkdir -p "$out/cells"
go build -o "$out/torsim" ./cmd/torsim
: >"$out/plain.yaml"
run() { # name, transport, core yaml, timing flags...
	name=$1 tr=$2 core=$3
	shift 3
	"$out/torsim" --topo chain --rate 1G --workload sequence --count 800 --depth 8 --size 64KiB --transport "$tr" \
		--switch "$out/plain.yaml" --switch-for "core=$core" --seed "$seed" --until 120s --quiet --out "$out/cells/$name" "$@" >/dev/null
}
for seed in $seeds; do
	for timing in link testbed; do
		set --
		[ $timing = testbed ] && set -- --rate 850M --fabric-rate 1G --delay 37us --fabric-delay 37us
		run "$timing-dcp-0-s$seed" dcp "$out/plain.yaml" "$@"
		for loss in 0.0001 0.001 0.01 0.05; do
			printf 'impair:\n  rules:\n    - {port: tor2, direction: egress, match: fabric, loss: %s, trim: %s}\n    - {port: tor2, direction: ingress, match: fabric, loss: %s}\n' \
				"$loss" true "$loss" >"$out/core-dcp-$loss.yaml"
			printf 'impair:\n  rules:\n    - {port: tor2, direction: egress, match: fabric, loss: %s}\n    - {port: tor2, direction: ingress, match: fabric, loss: %s}\n' \
				"$loss" "$loss" >"$out/core-gbn-$loss.yaml"
			run "$timing-dcp-$loss-s$seed" dcp "$out/core-dcp-$loss.yaml" "$@"
			run "$timing-gbn-$loss-s$seed" gbn "$out/core-gbn-$loss.yaml" "$@"
		done
	done
done
# shellcheck disable=SC2086 # refs: paths without spaces
python3 - "$out" "$seeds" $refs <<'PY'
import json, sys, os, statistics
out, seeds, refs = sys.argv[1], sys.argv[2].split(), [r for r in sys.argv[3:] if os.path.exists(r)]
losses = ["0.0001", "0.001", "0.01", "0.05"]
tb = {}
for r in refs:
    for c in json.load(open(r))["cells"]:
        tb.setdefault(c["loss"], []).append(c)
def g(n):
    return json.load(open(f"{out}/cells/{n}/result.json"))
def med(xs, fmt):
    xs = sorted(xs)
    m = statistics.median(xs)
    return (fmt % m) + (" [" + (fmt % xs[0]) + "–" + (fmt % xs[-1]) + "]" if len(xs) > 1 else "")
def cell(timing, tr, loss, s):
    r = g(f"{timing}-{tr}-{loss}-s{s}")
    h, im = r["host_counters"], r["stages"].get("impair", {})
    return {"gp": r["goodput_gbps"], "retx": h.get("Retransmits", 0), "to": h.get("Timeouts", 0),
            "trim": im.get("Dir.Trimmed", 0), "ctrl": im.get("Destroyed.control", 0), "done": r["completed"] == r["flows"]}
cols = "| timing | loss | DCP Gbit/s | GBN Gbit/s | DCP / GBN | DCP of lossless | DCP retx | GBN retx | trimmed at core | DCP timeouts | control frames destroyed (DCP) |"
rows = [cols, "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |"]
for timing in ["link", "testbed"]:
    clean = {s: g(f"{timing}-dcp-0-s{s}")["goodput_gbps"] for s in seeds}
    for loss in losses:
        d = [cell(timing, "dcp", loss, s) for s in seeds]
        b = [cell(timing, "gbn", loss, s) for s in seeds]
        rows.append("| sim, %s | %s%% | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (timing, "%g" % (float(loss) * 100),
            med([x["gp"] for x in d], "%.3f"), med([x["gp"] for x in b], "%.3f"),
            med([x["gp"] / y["gp"] for x, y in zip(d, b)], "%.2f"),
            med([x["gp"] / clean[s] for x, s in zip(d, seeds)], "%.2f"),
            med([x["retx"] for x in d], "%d"), med([x["retx"] for x in b], "%d"), med([x["trim"] for x in d], "%d"),
            med([x["to"] for x in d], "%d"), med([x["ctrl"] for x in d], "%d")))
        if not all(x["done"] for x in d + b):
            rows[-1] += " (a run did not finish)"
for loss in losses:
    cs = tb.get(float(loss))
    if not cs:
        continue
    rows.append("| testbed runs %d | %s%% | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (len(cs), "%g" % (float(loss) * 100),
        med([c["dcp_goodput_gbps"] for c in cs], "%.3f"), med([c["gbn_goodput_gbps"] for c in cs], "%.3f"),
        med([c["dcp_over_gbn"] for c in cs], "%.2f"), med([c["dcp_of_lossless"] for c in cs], "%.2f"),
        med([c["dcp_retx_packets"] for c in cs], "%d"), med([c["gbn_retx_packets"] for c in cs], "%d"),
        med([c["trimmed"] for c in cs], "%d"), med([c["dcp_timeouts"] for c in cs], "%d"),
        med([c["dcp_destroyed"]["control"] for c in cs], "%d")))
md = "\n".join(rows) + "\n"
open(f"{out}/dcp-loss.md", "w").write(md)
print(md)
PY
