#!/usr/bin/env python3
"""Summarises the cells run.sh wrote (run from this directory): per senders and
jitter, median (range) over seeds 1-3 of the FCTs, NetRT's change, the drop runs
(runs.json, made by runs.py from each drop log) beside what drops independent of
the sender would give, and the shares of the drops NetRT's destination ToR
asked for or saw beyond its bitmap (netrt_dst Ports.MissRequested, MissBeyond)."""
import json, statistics as st
SEEDS = (1, 2, 3)
def sp(v, f):
    return f"{f(st.median(v))} ({f(min(v))} … {f(max(v))})" if max(v) != min(v) else f(v[0])
ms = lambda v: f"{v/1e6:.3f}"
pc = lambda v: f"{v:+.0f} %"
sh = lambda v: f"{100*v:.0f} %"
n = lambda v: f"{v:,.0f}"
f1 = lambda v: f"{v:.1f}"
def cell(s, k, j, seed):
    d = f"{s}-{k}-j{j}-s{seed}"
    r = json.load(open(f"{d}/result.json"))
    (ru,) = json.load(open(f"{d}/runs.json")).values()
    return r, ru
print("| senders | jitter | GBN avg / p99 FCT ms | GBN + NetRT avg / p99 FCT ms | NetRT's change avg / p99 | drop runs: mean (independent drops) | drops in runs ≥ 8 (independent) | longest run | NetRT: asked for / beyond the bitmap | hosts' timeouts GBN / NetRT |")
print("| --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
for k in (15, 40):
    for j in ('0', '177ns'):
        g = [cell('gbn', k, j, s) for s in SEEDS]
        t = [cell('netrt', k, j, s) for s in SEEDS]
        m = lambda x, key: x[0]['fct_all'][key]
        ch = lambda key: [100 * (m(b, key) / m(a, key) - 1) for a, b in zip(g, t)]
        runs = g + t
        dst = lambda x, key: x[0]['stages']['netrt_dst'].get('Ports.' + key, 0) / x[0]['switch_drops']['queue_full']
        print(f"| {k} | {j} | {sp([m(x,'mean_fct_ns') for x in g], ms)} / {sp([m(x,'p99_fct_ns') for x in g], ms)} | "
              f"{sp([m(x,'mean_fct_ns') for x in t], ms)} / {sp([m(x,'p99_fct_ns') for x in t], ms)} | "
              f"{sp(ch('mean_fct_ns'), pc)} / {sp(ch('p99_fct_ns'), pc)} | "
              f"{sp([x[1]['mean_run'] for x in runs], f1)} ({sp([x[1]['fair_mean_run'] for x in runs], f1)}) | "
              f"{sp([x[1]['share_in_runs_ge8'] for x in runs], sh)} ({sp([x[1]['fair_share_ge8'] for x in runs], sh)}) | "
              f"{sp([x[1]['max_run'] for x in runs], n)} | "
              f"{sp([dst(x,'MissRequested') for x in t], sh)} / {sp([dst(x,'MissBeyond') for x in t], sh)} | "
              f"{sp([x[0]['host_counters']['Timeouts'] for x in g], n)} / {sp([x[0]['host_counters']['Timeouts'] for x in t], n)} |")
print()
print("Per seed (avg / p99 FCT ms, GBN then GBN + NetRT):")
print()
for k in (15, 40):
    for j in ('0', '177ns'):
        row = []
        for s in SEEDS:
            a, b = cell('gbn', k, j, s)[0]['fct_all'], cell('netrt', k, j, s)[0]['fct_all']
            row.append(f"seed {s}: {ms(a['mean_fct_ns'])} / {ms(a['p99_fct_ns'])}, {ms(b['mean_fct_ns'])} / {ms(b['p99_fct_ns'])}")
        print(f"- {k} senders, jitter {j}: " + "; ".join(row))
