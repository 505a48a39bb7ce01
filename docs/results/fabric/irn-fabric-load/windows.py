#!/usr/bin/env python3
"""Follows irn-fabric's levels over simulated time, from --flows dumps.

windows.py FLOWSDIR[,FLOWSDIR...] [WINDOW_MS] [BASE]

The directories hold irn-fabric --flows files (gzipped or not) of the
same flows: IRN's and another scheme's or more (RoCE+PFC, IRN+PFC). A
scheme run with a GBN window is named with it (roce+pfc@110).

Flows are binned by start time (WINDOW_MS, default 10). Per scheme and
window: the median over seeds of mean slowdown, mean FCT and p99 FCT of
the flows that started in it, and every other scheme's over BASE's
(default IRN's) per seed (median, range). Then the backlog: bytes of flows started and not yet finished,
sampled at each window's end, per scheme (median over seeds) -- a fabric
that keeps up holds it level; one that does not grows it with time.
Prints Markdown.
"""
import collections
import glob
import gzip
import os
import re
import statistics
import sys


class Flow(collections.namedtuple("Flow", "src dst sport size start fct ideal path")):
    """One line of a flow file (docs/simulator.md's columns), times in ns."""

    @property
    def slowdown(self):
        return self.fct / max(self.ideal, 1)

    def links(self):
        """The directed links the flow crosses: its source's, the path's, its destination's."""
        hops = [self.src] + self.path.split(">") + [self.dst]
        return zip(hops, hops[1:])


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return [Flow(c[0], c[1], c[2], int(c[4]), int(c[5]), int(c[6]), int(c[7]), c[10]) for c in map(str.split, f)]


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def main():
    dirs = sys.argv[1].split(",")
    w = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    wn = int(w * 1e6)
    cells = collections.defaultdict(dict)  # scheme -> seed -> flows
    for p in sorted(q for d in dirs for q in glob.glob(os.path.join(d, "*.txt*"))):
        # seedN-CC[-WINDOW]-SCHEME.txt: the window only for the GBN schemes.
        m = re.match(r".*/seed(\d+)-[a-z]+-(?:(none|\d+)-)?([a-z+-]+)\.txt(\.gz)?$", p)
        name = m.group(3) + (f"@{m.group(2)}" if m.group(2) not in (None, "none") else "")
        cells[name][int(m.group(1))] = load(p)
    schemes = sorted(cells)
    base = sys.argv[3] if len(sys.argv) > 3 else "irn" if "irn" in cells else None
    end = max(f.start for fl in cells[schemes[0]].values() for f in fl)
    nw = end // wn + 1

    def level(flows, i, j=None):
        fl = [f for f in flows if i * wn <= f.start < (j or i + 1) * wn]
        return (statistics.mean(f.slowdown for f in fl), statistics.mean(f.fct for f in fl) / 1e6,
                p99([f.fct for f in fl]) / 1e6, len(fl))

    # The last row pools the flows that started in the second half of the
    # arrivals, where the levels have stopped growing (if they have).
    half = nw // 2
    lv = {s: {seed: [level(fl, i) for i in range(nw)] + [level(fl, half, nw)] for seed, fl in cells[s].items()}
          for s in schemes}
    print(f"Flows by start time, {w:g} ms windows; median over seeds {sorted(cells[schemes[0]])}.\n")
    hdr = "| start ms | " + " | ".join(f"{s} slowdown | {s} FCT ms | {s} p99 ms" for s in schemes)
    others = [s for s in schemes if s != base] if base in cells else []
    for s in others:
        hdr += f" | {s}/{base} slowdown | FCT | p99"
    print(hdr + " |")
    print("|" + " --: |" * (hdr.count("|")))
    for i in range(nw + 1):
        row = [f"{i * w:g}–{(i + 1) * w:g}" if i < nw else f"**{half * w:g}–{nw * w:g}**"]
        for s in schemes:
            for k in range(3):
                row.append(f"{statistics.median(v[i][k] for v in lv[s].values()):.2f}")
        for s in others:
            for k in range(3):
                r = sorted(lv[s][seed][i][k] / lv[base][seed][i][k] for seed in lv[base])
                row.append(f"{statistics.median(r):.2f} ({r[0]:.2f} … {r[-1]:.2f})")
        print("| " + " | ".join(row) + " |")

    print("\nBacklog: MB of flows started and not finished, at each window's end (median over seeds).\n")
    print("| at ms | " + " | ".join(schemes) + " |")
    print("|" + " --: |" * (len(schemes) + 1))
    for i in range(nw):
        t = (i + 1) * wn
        row = [f"{(i + 1) * w:g}"]
        for s in schemes:
            b = [sum(f.size for f in fl if f.start <= t < f.start + f.fct) / 1e6 for fl in cells[s].values()]
            row.append(f"{statistics.median(b):.1f}")
        print("| " + " | ".join(row) + " |")
    print("\nLast completion, ms after the last start (median over seeds): " + ", ".join(
        f"{s} {statistics.median(max(f.start + f.fct for f in fl) - end for fl in cells[s].values()) / 1e6:.1f}"
        for s in schemes))

    # A QP (source, destination, source port) runs its flows one after
    # another: a flow that starts while an earlier flow of its QP has not
    # finished waits at least until that one finishes (less, if the NIC
    # starts it once the earlier one's last packet is out; so this is an
    # upper bound of the wait).
    print("\nTime behind earlier flows of the same QP: its share of all FCT, and the mean slowdown with it taken out (per seed).\n")
    print("| scheme | seed | QPs | share of FCT waiting | mean slowdown | without the wait |")
    print("| --- | --: | --: | --: | --: | --: |")
    for s in schemes:
        for seed, fl in sorted(cells[s].items()):
            byqp = collections.defaultdict(list)
            for f in fl:
                byqp[(f.src, f.dst, f.sport)].append(f)
            wait = 0
            sd = []
            for qp in byqp.values():
                qp.sort(key=lambda f: f.start)
                end_prev = 0
                for f in qp:
                    wt = max(0, end_prev - f.start)
                    wait += wt
                    sd.append((f.fct - wt) / max(f.ideal, 1))
                    end_prev = max(end_prev, f.start + f.fct)
            print(f"| {s} | {seed} | {len(byqp)} | {wait / sum(f.fct for f in fl):.1%} | "
                  f"{statistics.mean(f.slowdown for f in fl):.2f} | {statistics.mean(sd):.2f} |")

    # What the workload asks of each link over the whole run: every flow's
    # bytes on every link of its path (no resends), over the arrivals' span
    # at 40 Gbit/s. Random destinations and one ECMP path a flow leave some
    # links above the mean; a link asked more than it carries cannot settle.
    s0 = "irn" if "irn" in cells else schemes[0]
    print(f"\nOffered load per link over the {end / 1e6:.0f} ms of arrivals ({s0}'s flows and paths), per seed:\n")
    print("| seed | links | mean | p90 | max | links ≥ 90 % | links ≥ 100 % |")
    print("| --: | --: | --: | --: | --: | --: | --: |")
    for seed, fl in sorted(cells[s0].items()):
        by = collections.Counter()
        for f in fl:
            for l in f.links():
                by[l] += f.size
        ld = sorted(8 * b / (end * 40) for b in by.values())
        print(f"| {seed} | {len(ld)} | {statistics.mean(ld):.1%} | {ld[int(0.9 * len(ld))]:.1%} | {ld[-1]:.1%} | "
              f"{sum(x >= 0.9 for x in ld)} | {sum(x >= 1 for x in ld)} |")


if __name__ == "__main__":
    main()
