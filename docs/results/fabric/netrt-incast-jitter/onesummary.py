#!/usr/bin/env python3
"""Summarises onechange.sh's cells (run from this directory): per senders and
NetRT variant under --jitter 177ns, median (range) over seeds 1-3 of the avg
FCT, the change against GBN under the same jitter per seed, the hosts' timeouts
and the core's drops, and NetRT's destination ToR: gaps held, recovered in
order, given up after MaxRequests, unfulfilled by the source ToR, and the
source ToR's pause frames."""
import json, statistics as st
SEEDS = (1, 2, 3)
VARIANTS = [('gbn', 'none (lossy GBN)'), ('netrt', 'defaults'),
            ('netrt-noca', 'congestion avoidance off (`k_low: 64MiB, k_high: 128MiB`)'),
            ('netrt-maxreq1', 'one request before falling back (`max_requests: 1`)'),
            ('netrt-pool4m', 'pool 4 MiB (`pool_bytes: 4MiB, pool_frames: 8192`)'),
            ('netrt-buf1', 'no reordering buffer (`buffer_bytes: 1`)')]
def sp(v, f):
    return f"{f(st.median(v))} ({f(min(v))} … {f(max(v))})" if max(v) != min(v) else f(v[0])
ms = lambda v: f"{v/1e6:.3f}"
n = lambda v: f"{v:,.0f}"
def load(s, k, seed):
    return json.load(open(f"{s}-{k}-j177ns-s{seed}/result.json"))
print("| senders | NetRT | avg FCT ms | against GBN, per seed | hosts' timeouts | drops | NetRT: gaps / recovered / given up / unfulfilled / pause frames (medians) |")
print("| --: | --- | --: | --: | --: | --: | --: |")
for k in (15, 20, 40):
    g = [load('gbn', k, s) for s in SEEDS]
    for v, name in VARIANTS:
        r = [load(v, k, s) for s in SEEDS]
        avg = [x['fct_all']['mean_fct_ns'] for x in r]
        ch = ', '.join(f"{100*(a/b['fct_all']['mean_fct_ns']-1):+.0f} %" for a, b in zip(avg, g)) if v != 'gbn' else '–'
        d = lambda key: st.median(x['stages'].get('netrt_dst', {}).get('Ports.' + key, 0) for x in r)
        srcp = st.median(x['stages'].get('netrt_src', {}).get('Ports.Pauses', 0) for x in r)
        cnt = '–' if v == 'gbn' else ' / '.join(n(z) for z in (d('Gaps'), d('Recovered'), d('WaitGaveUp'), d('WaitUnfulfilled'), srcp))
        print(f"| {k} | {name} | {sp(avg, ms)} | {ch} | {sp([x['host_counters']['Timeouts'] for x in r], n)} | "
              f"{sp([x['switch_drops'].get('queue_full', 0) for x in r], n)} | {cnt} |")
