#!/bin/sh
# netrt-loss in the fabric simulator at the testbed's parameters (the
# chain at 1 Gbit/s, loss on both directions of core's port toward
# tor2, 200 WRITEs one after another per cell, GBN hosts, NetRT off and
# on), beside the testbed's own record.
#
#   scripts/sim-netrt-loss.sh [OUT] [TESTBED_JSON]
#
# Writes OUT/cells (one torsim result per cell) and OUT/netrt-loss.md.
set -eu
out=${1:-results/sim-netrt-loss}
ref=${2:-docs/results/netrt-loss-5.json}
mkdir -p "$out/cells"
go build -o "$out/torsim" ./cmd/torsim
# The ToRs' netrt: section as testbed writes it (tor/lab/tordconfig.go).
cat >"$out/netrt.yaml" <<'YAML'
netrt:
  fabric: [fabric]
  pool_bytes: 2MiB
  pool_frames: 2048
  hold: 20ms
  tail_probe: 4ms
  buffer_bytes: 2MiB
  buffer_frames: 2048
  request_interval: 1ms
  max_requests: 8
  window: 500us
YAML
: >"$out/plain.yaml"
for loss in 0.001 0.005 0.01 0.05; do
	printf 'impair:\n  rules:\n    - {port: tor2, direction: egress, match: fabric, loss: %s}\n    - {port: tor2, direction: ingress, match: fabric, loss: %s}\n' \
		"$loss" "$loss" >"$out/core-$loss.yaml"
	for size in 10000 100000 1000000; do
		for mode in plain netrt; do
			"$out/torsim" --topo chain --rate 1G --workload sequence --count 200 --depth 1 --size "$size" \
				--switch "$out/$mode.yaml" --switch-for "core=$out/core-$loss.yaml" --seed 1 --quiet \
				--out "$out/cells/$loss-$size-$mode" 2>/dev/null
		done
	done
done
python3 - "$out" "$ref" <<'PY'
import json, sys, os
out, ref = sys.argv[1], sys.argv[2]
tb = {}
if os.path.exists(ref):
    for c in json.load(open(ref))["cells"]:
        tb[(c["loss"], c["size"])] = c
rows = ["| loss | size | mode | sim p50 FCT µs | sim p99 | sim e2e retx | testbed p50 | testbed p99 | testbed e2e retx |",
        "| --: | --: | --- | --: | --: | --: | --: | --: | --: |"]
for loss in ["0.001", "0.005", "0.01", "0.05"]:
    for size in [10000, 100000, 1000000]:
        for mode, key in [("plain", "baseline"), ("netrt", "netrt")]:
            r = json.load(open(f"{out}/cells/{loss}-{size}-{mode}/result.json"))
            t = tb.get((float(loss), size), {}).get(key)
            tbs = ["%.0f" % t["fct_us"]["p50"], "%.0f" % t["fct_us"]["p99"], str(t["e2e_retx"])] if t else ["–"] * 3
            rows.append("| %s | %d | %s | %.0f | %.0f | %d | %s |" % (loss, size, "GBN+NetRT" if mode == "netrt" else "GBN",
                r["fct_all"]["p50_fct_ns"] / 1e3, r["fct_all"]["p99_fct_ns"] / 1e3, r["host_counters"].get("Retransmits", 0), " | ".join(tbs)))
md = "\n".join(rows) + "\n"
open(f"{out}/netrt-loss.md", "w").write(md)
print(md)
PY
