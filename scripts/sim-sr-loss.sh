#!/bin/sh
# sr-loss in the fabric simulator at the testbed's parameters: the chain
# with 1 Gbit/s links, hosts paced at 200 Mbit/s (host links at 200M),
# 5,000 WRITEs of 8 KiB at a depth of 32 (256 KiB), loss on both
# directions of core's port toward tor2, each transport's goodput as a
# share of its lossless run, beside the testbed's record.
#
#   scripts/sim-sr-loss.sh [OUT] [TESTBED_JSON]
set -eu
out=${1:-results/sim-sr-loss}
ref=${2:-docs/results/sr-loss-3.json}
mkdir -p "$out/cells"
go build -o "$out/torsim" ./cmd/torsim
: >"$out/plain.yaml"
printf 'netrt:\n  fabric: [fabric]\n  pool_bytes: 2MiB\n  pool_frames: 2048\n  hold: 20ms\n  tail_probe: 4ms\n  buffer_bytes: 2MiB\n  buffer_frames: 2048\n  request_interval: 1ms\n  max_requests: 8\n  window: 500us\n' >"$out/netrt.yaml"
for loss in 0 0.0001 0.001 0.005 0.01 0.02; do
	trim=""
	printf 'impair:\n  rules:\n    - {port: tor2, direction: egress, match: fabric, loss: %s}\n    - {port: tor2, direction: ingress, match: fabric, loss: %s}\n' \
		"$loss" "$loss" >"$out/core-$loss.yaml"
	printf 'impair:\n  rules:\n    - {port: tor2, direction: egress, match: fabric, loss: %s, trim: true}\n    - {port: tor2, direction: ingress, match: fabric, loss: %s, trim: true}\n' \
		"$loss" "$loss" >"$out/core-trim-$loss.yaml"
	for t in gbn irn fasr netrt dcp; do
		sw=plain tr=$t core=core-$loss
		[ "$t" = netrt ] && sw=netrt tr=gbn
		[ "$t" = dcp ] && [ "$loss" != 0 ] && core=core-trim-$loss
		"$out/torsim" --topo chain --rate 200M --fabric-rate 1G --workload sequence --count 5000 --depth 32 --size 8192 \
			--transport "$tr" --switch "$out/$sw.yaml" --switch-for "core=$out/$core.yaml" --seed 1 --quiet \
			--out "$out/cells/$t-$loss" >/dev/null
	done
done
python3 - "$out" "$ref" <<'PY'
import json, sys, os
out, ref = sys.argv[1], sys.argv[2]
tb = {}
if os.path.exists(ref):
    for c in json.load(open(ref))["cells"]:
        tb[(c["transport"], c["loss"])] = c
rows = ["| transport | loss | sim goodput ratio | sim retx | sim timeouts | testbed goodput ratio | testbed retx | testbed timeouts |",
        "| --- | --: | --: | --: | --: | --: | --: | --: |"]
for t in ["gbn", "irn", "fasr", "netrt", "dcp"]:
    base = json.load(open(f"{out}/cells/{t}-0/result.json"))["goodput_gbps"]
    for loss in ["0", "0.0001", "0.001", "0.005", "0.01", "0.02"]:
        r = json.load(open(f"{out}/cells/{t}-{loss}/result.json"))
        c = tb.get((t, float(loss)))
        tbs = ["%.3f" % c["goodput_ratio"], str(c["retx_packets"]), str(c["timeouts"])] if c else ["–"] * 3
        h = r["host_counters"]
        rows.append("| %s | %s | %.3f | %d | %d | %s |" % (t, loss, r["goodput_gbps"] / base if base else 0,
            h.get("Retransmits", 0), h.get("Timeouts", 0), " | ".join(tbs)))
md = "\n".join(rows) + "\n"
open(f"{out}/sr-loss.md", "w").write(md)
print(md)
PY
