#!/usr/bin/env python3
"""Drop runs per flow from a torsim --drops log (netrt-incast's one dropping
port): a run is a flow's drops at consecutive PSNs, which its sender sent one
after another. Prints each log's runs beside what drops independent of the
sender would give at the port's drop probability while it drops (p_local:
drops over arrivals, arrivals being the drops and one departure per 1 KB
frame time at 50 Gbit/s over the spans in which drops come less than 2 us
apart). runs.py [--json] LOG..."""
import sys, statistics as st, json
SER = (1082 + 24) * 8 / 50  # ns a 1 KB frame takes on 50 Gbit/s
def load(path):
    rows = []
    for l in open(path):
        if l.startswith('#'): continue
        t, sw, i, o, r, src, dst, qp, psn, op, n = l.split()
        if r != 'queue_full' or src == '-': continue
        rows.append((int(t), src, int(psn)))
    return rows
def runs(rows):
    last, cur, out = {}, {}, []
    for t, f, p in rows:
        if f in last and (p - last[f]) % (1 << 24) == 1:
            cur[f] += 1
        else:
            if f in cur: out.append(cur[f])
            cur[f] = 1
        last[f] = p
    out += cur.values()
    return out
def passes(rows):
    """Each flow's drops cut where its PSN goes back (the sender went back
    N): per pass, how many were dropped and how far past its first drop
    the sender went before going back (PSNs from the first drop to the last)."""
    first, last, n, out = {}, {}, {}, []
    for t, f, p in rows:
        if f in last and ((p - last[f] + (1 << 23)) % (1 << 24)) - (1 << 23) <= 0:
            out.append((n[f], (last[f] - first[f]) % (1 << 24)))
            del first[f]
        if f not in first:
            first[f], n[f] = p, 0
        n[f] += 1
        last[f] = p
    out += [(n[f], (last[f] - first[f]) % (1 << 24)) for f in first]
    return out
def congested(rows, gap=2000):
    """Time spans in which drops come less than gap ns apart, their drops."""
    spans, s0, prev, n = [], None, None, 0
    for t, _, _ in rows:
        if prev is None or t - prev > gap:
            if s0 is not None: spans.append((s0, prev, n))
            s0, n = t, 0
        n += 1; prev = t
    spans.append((s0, prev, n))
    return spans
def summary(path):
    rows = load(path)
    rs = runs(rows)
    sp = congested(rows)
    t = sum(b - a + SER for a, b, _ in sp)
    d = sum(n for *_, n in sp)
    dep = t / SER
    p = d / (d + dep)
    ps = passes(rows)
    return dict(passes=len(ps), drops_per_pass=st.median(n for n, _ in ps),
                span_per_pass=st.median(sp for _, sp in ps), drops=len(rows), flows=len({f for _, f, _ in rows}), runs=len(rs),
                mean_run=st.mean(rs), median_run=st.median(rs), max_run=max(rs),
                share_in_runs_ge8=sum(r for r in rs if r >= 8) / len(rows),
                congested_us=t / 1000, p_local=p, fair_mean_run=1 / (1 - p),
                fair_share_ge8=p ** 7 * (8 - 7 * p))  # P(a drop lies in a run >= 8), geometric runs
if __name__ == '__main__':
    if sys.argv[1] == '--json':
        print(json.dumps({a: summary(a) for a in sys.argv[2:]}, indent=1))
        sys.exit()
    for a in sys.argv[1:]:
        s = summary(a)
        print(a, ' '.join(f'{k}={v:.3g}' if isinstance(v, float) else f'{k}={v}' for k, v in s.items()))
