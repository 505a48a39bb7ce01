#!/bin/sh
# llr-loss in the fabric simulator at the testbed's parameters: the link
# topology (h1 — tor1 — tor2 — h2, in the simulator as on the testbed)
# at 1 Gbit/s, corruption on both directions of tor1's port toward tor2,
# GBN hosts, COUNT WRITEs of 1 MiB one after another, link-local
# retransmission off, nb or blocking; effective loss (frames the hosts
# lost after llr), end-to-end retransmissions and goodput as a share of
# the clean link's, beside the testbed's record.
#
#   scripts/sim-llr-loss.sh [OUT] [TESTBED_JSON] [COUNT]
set -eu
out=${1:-results/sim-llr-loss}
ref=${2:-docs/results/llr-loss-2.json}
count=${3:-1000}
mkdir -p "$out/cells"
go build -o "$out/torsim" ./cmd/torsim
run() { # name, tor1 yaml, tor2 yaml
	"$out/torsim" --topo link --rate 1G --workload sequence --count "$count" --size 1MiB \
		--switch-for "tor1=$2" --switch-for "tor2=$3" --seed 1 --quiet --out "$out/cells/$1" >/dev/null
}
: >"$out/off.yaml"
run clean "$out/off.yaml" "$out/off.yaml"
for mode in off nb blocking; do
	llr=""
	[ "$mode" != off ] && llr="llr: {ports: [fabric], mode: $mode}"
	printf '%s\n' "$llr" >"$out/tor2-$mode.yaml"
	for loss in 1e-5 1e-4 1e-3 1e-2; do
		printf '%s\nimpair:\n  rules:\n    - {port: tor2, direction: egress, match: fabric, corrupt: %s}\n    - {port: tor2, direction: ingress, match: fabric, corrupt: %s}\n' \
			"$llr" "$loss" "$loss" >"$out/tor1-$mode-$loss.yaml"
		run "$mode-$loss" "$out/tor1-$mode-$loss.yaml" "$out/tor2-$mode.yaml"
	done
done
python3 - "$out" "$ref" <<'PY'
import json, sys, os
out, ref = sys.argv[1], sys.argv[2]
tb = {}
if os.path.exists(ref):
    for c in json.load(open(ref))["cells"]:
        tb[(c["mode"], c["loss"])] = c
clean = json.load(open(f"{out}/cells/clean/result.json"))["goodput_gbps"]
rows = ["| mode | corruption | sim e2e retx | sim goodput ratio | sim llr retransmitted | testbed e2e retx | testbed goodput ratio |",
        "| --- | --: | --: | --: | --: | --: | --: |"]
for mode in ["off", "nb", "blocking"]:
    for loss in ["1e-5", "1e-4", "1e-3", "1e-2"]:
        r = json.load(open(f"{out}/cells/{mode}-{loss}/result.json"))
        c = tb.get((mode, float(loss)))
        tbs = [str(c["e2e_retx"]), "%.3f" % c["goodput_ratio"]] if c else ["–"] * 2
        llr = r.get("stages", {}).get("llr", {}).get("Ports.Retransmitted", 0)
        rows.append("| %s | %s | %d | %.3f | %d | %s |" % (mode, loss, r["host_counters"].get("Retransmits", 0),
            r["goodput_gbps"] / clean, llr, " | ".join(tbs)))
md = "\n".join(rows) + "\n"
open(f"{out}/llr-loss.md", "w").write(md)
print(md)
PY
