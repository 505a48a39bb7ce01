#!/usr/bin/env python3
"""A record without jitter beside the same set with it (run.sh): per cell point
(every point field; seeds pooled), median over seeds of the mean slowdown (and
its range), the mean FCT and the p99 FCT, and the hosts' retransmissions, each
without -> with, and with/without. compare.py OLD.json NEW.json (run from
anywhere); the compare-*.md beside it are its output."""
import json, statistics as st, sys
def load(p):
    out = {}
    for r in json.load(open(p))['runs']:
        f = r.get('fabric')
        if not f:
            continue
        k = tuple(sorted(r['point'].items()))
        out.setdefault(k, []).append(f)
    return out
old, new = load(sys.argv[1]), load(sys.argv[2])
def med(fs, get):
    return st.median(get(f) for f in fs)
M = [('mean slowdown', lambda f: f['fct_all']['mean_slowdown'], '{:.2f}'),
     ('mean FCT ms', lambda f: f['fct_all']['mean_fct_ns'] / 1e6, '{:.3f}'),
     ('p99 FCT ms', lambda f: f['fct_all']['p99_fct_ns'] / 1e6, '{:.3f}'),
     ('retransmits', lambda f: f['host_counters'].get('Retransmits', 0), '{:,.0f}')]
print('| point | seeds | ' + ' | '.join(f'{n} (with/without)' for n, _, _ in M) + ' |')
print('| --- | --: |' + ' --: |' * len(M))
for k in old:
    if k not in new:
        continue
    cells = []
    for n, get, fmt in M:
        a, b = med(old[k], get), med(new[k], get)
        ratio = f'{b / a:.2f}' if a else '–'
        if n == 'mean slowdown':
            rg = lambda fs: f"{fmt.format(min(map(get, fs)))} … {fmt.format(max(map(get, fs)))}"
            cells.append(f'{fmt.format(a)} ({rg(old[k])}) → {fmt.format(b)} ({rg(new[k])}) ({ratio})')
            continue
        cells.append(f'{fmt.format(a)} → {fmt.format(b)} ({ratio})')
    print('| ' + ', '.join(f'{x}={y}' for x, y in k) + f' | {len(new[k])} | ' + ' | '.join(cells) + ' |')
