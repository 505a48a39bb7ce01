#!/usr/bin/env python3
"""Summarise a BenchmarkPipelineScaleInterleaved record (bench-pipeline-scale-1[0-4].txt): per series
(the word after the round number), medians and ranges of each metric over its runs."""
import re,statistics as st,sys
rows={};t=None
for l in open(sys.argv[1]):
    m=re.match(r'== \d+ (\w+)',l)
    if m: t=m.group(1);continue
    if l.startswith('Bench'):
        d=dict((k,float(v)) for v,k in re.findall(r'(\S+) (apart-ns/pkt|ceiling|of-ceiling|scaling|w1-ns/pkt|w2-ns/pkt)',l))
        rows.setdefault(t,[]).append(d)
for t,rs in rows.items():
    def f(k): x=[r[k] for r in rs]; return f"{st.median(x):.3g} ({min(x):.3g}–{max(x):.3g})"
    print(t,len(rs),'runs: w1',f('w1-ns/pkt'),'w2',f('w2-ns/pkt'),'apart',f('apart-ns/pkt'),'scaling',f('scaling'),'ceiling',f('ceiling'),'of-ceiling',f('of-ceiling'),'scaling>=1.8:',sum(r['scaling']>=1.8 for r in rs))
