#!/usr/bin/env python3
"""Figs. 1-3's and 7's ratios from irn-fabric records whose cells may lie in several of them (a lossy set
and the PFC cells of another): per seed (the run's `repeat`) on the same flows, the scheme's metric
over the baseline's, median and range over seeds. ratios.py RECORD.json... (later records' cells
replace earlier ones' of the same point and seed)."""
import json, statistics as st, sys
cells = {}
for p in sys.argv[1:]:
    for r in json.load(open(p))['runs']:
        if r.get('fabric'):
            pt = r['point']
            cells[(pt['scheme'], pt['cc'], pt['gbn_window'], r['repeat'])] = r['fabric']
M = [('avg slowdown', lambda f: f['fct_all']['mean_slowdown']),
     ('avg FCT', lambda f: f['fct_all']['mean_fct_ns']),
     ('p99 FCT', lambda f: f['fct_all']['p99_fct_ns'])]
C = [('RoCE+PFC over IRN (Fig. 1)', ('roce+pfc', 'none'), ('irn', '-')),
     ('RoCE+PFC over IRN (Fig. 1)', ('roce+pfc', '110'), ('irn', '-')),
     ('IRN+PFC over IRN (Fig. 2)', ('irn+pfc', '-'), ('irn', '-')),
     ('RoCE over RoCE+PFC (Fig. 3)', ('roce', 'none'), ('roce+pfc', 'none')),
     ('RoCE over RoCE+PFC (Fig. 3)', ('roce', '110'), ('roce+pfc', '110')),
     ('IRN with go-back-N over IRN (Fig. 7)', ('irn-gbn', '-'), ('irn', '-')),
     ('IRN without BDP-FC over IRN (Fig. 7)', ('irn-nobdpfc', '-'), ('irn', '-'))]
ccs = sorted({k[1] for k in cells})
print('| comparison | cc | gbn window | ' + ' | '.join(n for n, _ in M) + ' |')
print('| --- | --- | --- |' + ' --: |' * len(M))
for name, (s, w), (bs, bw) in C:
    for cc in ccs:
        seeds = sorted(k[3] for k in cells if k[:3] == (s, cc, w) and (bs, cc, bw, k[3]) in cells)
        if not seeds:
            continue
        out = []
        for _, get in M:
            r = [get(cells[(s, cc, w, n)]) / get(cells[(bs, cc, bw, n)]) for n in seeds]
            out.append(f'{st.median(r):.2f} ({min(r):.2f} … {max(r):.2f})')
        print(f'| {name} | {cc} | {w} | ' + ' | '.join(out) + ' |')
