#!/usr/bin/env python3
"""Summarise bench-pipeline-scale-5.txt: per tree, the scaling (workers=1 over
workers=2 ns/pkt) and the machine's ceiling in the same round (workers=1 over
apart=2), over all rounds and over the rounds whose ceiling is at least 1.8."""
import re, statistics as st, sys

rows, run, rnd, v = [], 0, None, {}
for line in open(sys.argv[1] if len(sys.argv) > 1 else 'bench-pipeline-scale-5.txt'):
    m = re.match(r'== round (\d+) (\w+)', line)
    if m:
        if m.group(1) == '1' and m.group(2) == 'old':
            run += 1
        rnd = (run, int(m.group(1)), m.group(2))
        continue
    m = re.match(r'BenchmarkPipelineScale/(\S+)-2\s+\d+\s+\S+ ns/op.*?(\S+) ns/pkt', line)
    if m and rnd:
        v[rnd + (m.group(1),)] = float(m.group(2))
for (r, i, k, b), w1 in v.items():
    if b == 'workers=1':
        w2, ap = v[(r, i, k, 'workers=2')], v[(r, i, k, 'apart=2')]
        rows.append((r, i, k, w1 / w2, w1 / ap, ap / w2))
for r, i, k, s, c, e in sorted(rows):
    print(f"run {r} round {i} {k}: scaling {s:.2f} ceiling {c:.2f}")
for tree in ('old', 'new'):
    for lo in (0, 1.8):
        sel = [x for x in rows if x[2] == tree and x[4] >= lo]
        sc = [x[3] for x in sel]
        print(f"{tree}, ceiling >= {lo}: {len(sel)} rounds, scaling median {st.median(sc):.2f} "
              f"({min(sc):.2f}-{max(sc):.2f}), >= 1.8 in {sum(s >= 1.8 for s in sc)}; "
              f"apart/workers=2 median {st.median(x[5] for x in sel):.2f}")
