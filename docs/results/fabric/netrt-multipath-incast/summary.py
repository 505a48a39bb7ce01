#!/usr/bin/env python3
"""summary.py: the incast records' cells side by side, median (range) over
seeds: average and p99 FCT, the hosts' resends per 100 KB, NAKs the
receivers sent, packets they saw out of order, timeouts, drops; and the
per-seed change of spraying / adaptive over ECMP (GBN) and of NetRT over
GBN under the same choice."""
import json, statistics, sys

def med(xs, p=2):
    xs = sorted(xs)
    return f"{statistics.median(xs):.{p}f} ({xs[0]:.{p}f}–{xs[-1]:.{p}f})" if len(xs) > 1 else f"{xs[0]:.{p}f}"

def lost(f):
    return sum(v for k, v in (f.get('switch_drops') or {}).items() if not k.startswith('netrt_'))

def metrics(f):
    h = f['host_counters']
    return {'avg': f['fct_all']['mean_fct_ns'] / 1e6, 'p99': f['fct_all']['p99_fct_ns'] / 1e6,
            'per100': h.get('Retransmits', 0) / (f['bytes'] / 1e5), 'naks': h.get('NAKsSent', 0),
            'ooo': h.get('OutOfOrder', 0), 'to': h.get('Timeouts', 0), 'drops': lost(f)}

print("| queue | cores | multipath | scheme | avg FCT ms | p99 FCT ms | resends per 100 KB | NAKs sent | out of order | timeouts | drops |")
print("| --- | --: | --- | --- | --: | --: | --: | --: | --: | --: | --: |")
changes = []
for name in sys.argv[1:]:
    r = json.load(open(name))
    q, c = r['params']['queue'], r['params']['fabric'].split(',')[1]
    cells = {}
    for run in r['runs']:
        pt = run['point']
        cells.setdefault((pt['multipath'], pt['scheme']), []).append(metrics(run['fabric']))
    for (m, s), ms in cells.items():
        col = lambda k, p=2: med([x[k] for x in ms], p)
        print(f"| {int(q) >> 20} MiB | {c} | {m} | {s} | {col('avg', 3)} | {col('p99', 3)} | {col('per100')} | {col('naks', 0)} | {col('ooo', 0)} | {col('to', 0)} | {col('drops', 0)} |")
    for m in ('spray', 'adaptive'):
        if (m, 'gbn') in cells and ('ecmp', 'gbn') in cells:
            a = [100 * (x['avg'] / y['avg'] - 1) for x, y in zip(cells[(m, 'gbn')], cells[('ecmp', 'gbn')])]
            n = [100 * (x['avg'] / y['avg'] - 1) for x, y in zip(cells[(m, 'gbn+netrt')], cells[(m, 'gbn')])]
            changes.append(f"| {int(q) >> 20} MiB | {c} | {m} | {med(a, 0)} % | {med(n, 0)} % |")
print()
print("| queue | cores | multipath | GBN over ECMP GBN, avg FCT | GBN + NetRT over GBN, avg FCT |")
print("| --- | --: | --- | --: | --: |")
print("\n".join(changes))
