#!/bin/sh
# dcp-loss in the fabric simulator at the testbed's parameters: the
# chain at 1 Gbit/s, 800 WRITEs of 64 KiB at a depth of 8, random loss on
# both directions of core's port toward tor2 (tor1 in the simulator's
# names) — trimmed to header-only packets for DCP, whose switches trim
# (trim: {}), dropped for GBN —, goodput beside the testbed's record.
#
#   scripts/sim-dcp-loss.sh [OUT] [TESTBED_JSON]
set -eu
out=${1:-results/sim-dcp-loss}
ref=${2:-docs/results/dcp-loss-3.json}
mkdir -p "$out/cells"
go build -o "$out/torsim" ./cmd/torsim
run() { # name, transport, switch yaml, core yaml
	"$out/torsim" --topo chain --rate 1G --workload sequence --count 800 --depth 8 --size 64KiB --transport "$2" \
		--switch "$3" --switch-for "core=$4" --seed 1 --quiet --out "$out/cells/$1" >/dev/null
}
printf 'trim: {}\n' >"$out/trim.yaml"
: >"$out/plain.yaml"
run dcp-0 dcp "$out/trim.yaml" "$out/trim.yaml"
for loss in 0.0001 0.001 0.01 0.05; do
	printf 'trim: {}\nimpair:\n  rules:\n    - {port: tor1, direction: egress, match: fabric, loss: %s, trim: true}\n    - {port: tor1, direction: ingress, match: fabric, loss: %s, trim: true}\n' \
		"$loss" "$loss" >"$out/core-dcp-$loss.yaml"
	printf 'impair:\n  rules:\n    - {port: tor1, direction: egress, match: fabric, loss: %s}\n    - {port: tor1, direction: ingress, match: fabric, loss: %s}\n' \
		"$loss" "$loss" >"$out/core-gbn-$loss.yaml"
	run "dcp-$loss" dcp "$out/trim.yaml" "$out/core-dcp-$loss.yaml"
	run "gbn-$loss" gbn "$out/plain.yaml" "$out/core-gbn-$loss.yaml"
done
python3 - "$out" "$ref" <<'PY'
import json, sys, os
out, ref = sys.argv[1], sys.argv[2]
tb = {}
if os.path.exists(ref):
    for c in json.load(open(ref))["cells"]:
        tb[c["loss"]] = c
g = lambda n: json.load(open(f"{out}/cells/{n}/result.json"))
clean = g("dcp-0")["goodput_gbps"]
rows = ["| loss | sim DCP Gbit/s | sim GBN Gbit/s | sim DCP/GBN | sim DCP of lossless | sim DCP retx | sim GBN retx | testbed DCP/GBN | testbed DCP of lossless | testbed DCP retx | testbed GBN retx |",
        "| --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |"]
for loss in ["0.0001", "0.001", "0.01", "0.05"]:
    d, b = g("dcp-" + loss), g("gbn-" + loss)
    c = tb.get(float(loss))
    tbs = ["%.2f" % c["dcp_over_gbn"], "%.2f" % c["dcp_of_lossless"], str(c["dcp_retx_packets"]), str(c["gbn_retx_packets"])] if c else ["–"] * 4
    rows.append("| %s | %.3f | %.3f | %.2f | %.2f | %d | %d | %s |" % (loss, d["goodput_gbps"], b["goodput_gbps"],
        d["goodput_gbps"] / b["goodput_gbps"], d["goodput_gbps"] / clean, d["host_counters"].get("Retransmits", 0),
        b["host_counters"].get("Retransmits", 0), " | ".join(tbs)))
md = "\n".join(rows) + "\n"
open(f"{out}/dcp-loss.md", "w").write(md)
print(md)
PY
