#!/usr/bin/env python3
"""Where each run lost packets, and how evenly the cores carried each ToR's traffic (from counters.json)."""
import collections, json, statistics, sys

for run in sys.argv[1:] or ["ad0s2", "ad20s2", "ad20klow1ks2", "sp20s2"]:
    c = json.load(open(run + "/counters.json"))
    where = collections.Counter()
    for q in c["queue_drops"]:
        core = q["switch"].startswith("spine")
        where["core toward a ToR" if core else ("ToR toward a core" if q["port"].startswith("spine") else "ToR toward a host")] += q["drops"]
    top = max(c["queue_drops"], key=lambda q: q["drops"])
    ratio, spread = [], []
    for cores in c["core_downlinks"].values():
        tx = [v["tx_bytes"] for v in cores.values()]
        pk = [v["peak_bytes"] for v in cores.values()]
        ratio.append(max(tx) / statistics.mean(tx))
        spread.append((max(pk) - min(pk)) / 1024)
    print(f"{run}: hosts paused {c['host_pfc_pause_ns'] / 1e6:.1f} ms in all (PFC from the switches: {c['pfc_frames']} frames)")
    print(f"  lost {sum(where.values())}: {dict(where)}; most at {top['switch']} → {top['port']} ({top['drops']})")
    print(f"  the four cores' bytes toward a ToR, max/mean: median {statistics.median(ratio):.2f} ({min(ratio):.2f}–{max(ratio):.2f});"
          f" their queues' peaks differ by a median {statistics.median(spread):.0f} KB, by ≥ 512 KB at {sum(s >= 512 for s in spread)} of {len(spread)} ToRs")
