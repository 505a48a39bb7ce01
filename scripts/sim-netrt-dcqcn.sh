#!/bin/sh
# NetRT on dcqcn-fairness's and dcqcn-incast's dumbbell in the fabric
# simulator: n senders behind tor1 writing 64 KiB WRITEs (depth 4) to a
# receiver each behind tor2, hosts at 200 Mbit/s, the tor1–tor2 link at
# 200 Mbit/s (tor1's port toward tor2 is the bottleneck, as on the
# testbed), 256 KiB queues marking ECN at 20 KB / 100 KB / 20 %. GBN
# alone, GBN with NetRT (the testbed's netrt section) and the same with
# tail_probe off, with and without DCQCN (the simulator's ConnectX
# defaults): the drops at the bottleneck and what tor1's pool sent.
#
#   scripts/sim-netrt-dcqcn.sh [OUT]
set -eu
[ $# -le 1 ] || { echo "usage: $0 [OUT]" >&2; exit 2; }
out=${1:-results/sim-netrt-dcqcn}
mkdir -p "$out/cells"
go build -o "$out/torsim" ./cmd/torsim
printf 'egress:\n  queue_limit: 256KiB\necn:\n  profiles:\n    default: {min_threshold: 20KB, max_threshold: 100KB, probability: 20}\n' >"$out/plain.yaml"
netrt='netrt:\n  fabric: [fabric]\n  pool_bytes: 2MiB\n  pool_frames: 2048\n  hold: 20ms\n  buffer_bytes: 2MiB\n  buffer_frames: 2048\n  request_interval: 1ms\n  max_requests: 8\n  window: 500us\n'
{ cat "$out/plain.yaml"; printf "$netrt"; printf '  tail_probe: 4ms\n'; } >"$out/netrt.yaml"
{ cat "$out/plain.yaml"; printf "$netrt"; } >"$out/notail.yaml"
for n in 2 4; do
	python3 - "$n" "$out/flows-$n.txt" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
count = 150 if n == 2 else 100
lines = []
for s in range(n):
    base = len(lines)
    for k in range(count):  # each WRITE after the one 4 before it: depth 4
        lines.append("%d %d 65536 0%s" % (s, n + s, "" if k < 4 else " %d" % (base + k - 4)))
open(path, "w").write("%d\n" % len(lines) + "\n".join(lines) + "\n")
PY
	for cc in dcqcn none; do
		for sw in plain netrt notail; do
			"$out/torsim" --topo "dumbbell:hosts=$n" --rate 200M --fabric-rate 200M --workload file \
				--traffic "$out/flows-$n.txt" --transport gbn --cc "$cc" --switch "$out/$sw.yaml" --seed 1 --quiet \
				--out "$out/cells/$n-$cc-$sw" >/dev/null 2>&1
		done
	done
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
rows = ["| senders | cc | switches | queue drops | pool resends | tail probes (deferred) | requests (PSNs in queue) | holds extended | host retx | timeouts | goodput (Gbit/s) |",
        "| --: | --- | --- | --: | --: | --- | --- | --: | --: | --: | --: |"]
for n in (2, 4):
    for cc in ("dcqcn", "none"):
        for sw, name in (("plain", "gbn"), ("netrt", "gbn + NetRT"), ("notail", "gbn + NetRT, no tail probe")):
            r = json.load(open(f"{out}/cells/{n}-{cc}-{sw}/result.json"))
            src = r["stages"].get("netrt_src", {})
            get = lambda k: src.get(k, 0)
            h = r["host_counters"]
            nrt = sw != "plain"
            rows.append("| %d | %s | %s | %d | %s | %s | %s | %s | %d | %d | %.3f |" % (
                n, cc, name, r["switch_drops"].get("queue_full", 0),
                get("Ports.Retrans") + get("Ports.Paced") if nrt else "–",
                "%d (%d)" % (get("Ports.TailProbes"), get("Ports.ProbesDeferred")) if nrt else "–",
                "%d (%d)" % (get("Ports.Requests"), get("Ports.InQueue")) if nrt else "–",
                get("Ports.HoldsExtended") if nrt else "–",
                h.get("Retransmits", 0), h.get("Timeouts", 0), r["goodput_gbps"]))
md = "\n".join(rows) + "\n"
open(f"{out}/netrt-dcqcn.md", "w").write(md)
print(md)
PY
