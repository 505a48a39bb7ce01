#!/usr/bin/env python3
"""Print what each paper-scale fabric experiment cost here, from the logs.

docs/experiments.md, "What each paper-scale experiment costs here", is made
from this script's output (committed beside it as cpu-times.txt); rerun it
after committing new logs:

    python3 docs/results/fabric/cpu-times.py > docs/results/fabric/cpu-times.txt

Three kinds of figure, never mixed:

- CPU: user + system seconds from /usr/bin/time (the cells' time.log, the
  shard logs' "wall=…_user=…" lines, the quiet netrt-incast run). The
  simulator runs a cell on one thread, so a cell's CPU time is what it
  takes on an idle CPU of this machine.
- quiet wall: measured on the idle machine (netrt-incast-quiet-time.txt,
  ci-wall-times-2.txt).
- busy wall: the records' per-cell wall_ns and the progress lines'
  "(4m36s)", taken beside other work: an upper bound on a cell's CPU time
  (give or take the few per cent a parallel garbage collector adds), never
  a wall time to quote.

Standard library only. Paths are relative to this file's directory.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# The paper-scale sets: name, the records (busy wall per cell), the
# /usr/bin/time logs (CPU per cell), and progress logs (busy wall per cell
# as "(1m2s)", filtered by a substring).
SETS = [
    ("irn-fabric", ["irn-fabric.json"], ["cost-cells/irn-fabric/time.log"], []),
    ("irn-fabric --schemes irn,irn-gbn,irn-nobdpfc", ["irn-fabric-ablations.json"],
     ["cost-cells/irn-fabric-ablations/time.log"], []),
    ("irn-fabric --cc dcqcn,timely --seeds 1", ["irn-fabric-cc-1.json"],
     [("cost-cells/irn-fabric-dcqcn/time.log", 0, 5), ("cost-cells/irn-fabric-timely/time.log", 0, 5)], []),
    ("irn-fabric --cc dcqcn", ["irn-fabric-dcqcn.json"], ["cost-cells/irn-fabric-dcqcn/time.log"], []),
    ("irn-fabric --cc timely", ["irn-fabric-timely.json"], ["cost-cells/irn-fabric-timely/time.log"], []),
    ("irn-fabric --cc dcqcn --ecn 5KB-200KB-1 --schemes irn,irn+pfc,roce+pfc", ["irn-fabric-dcqcn-ecn-3seeds.json"],
     ["cost-cells/irn-fabric-dcqcn-ecn/time.log"], []),
    ("netrt-incast", ["netrt-incast.json"], ["netrt-incast-quiet-time.txt"], []),
    ("five-way --seeds 1", ["five-way.json"], [("cost-cells/five-way/time.log", 0, 59)], []),
    ("five-way", ["five-way-3seeds.json"], ["cost-cells/five-way/time.log"], []),
    ("fasr-scale", ["fasr-scale.json"], ["cost-cells/fasr-scale/time.log"], []),
    ("llr-fabric", ["llr-fabric.json"], ["cost-cells/llr-fabric/time.log"], []),
    ("dcp-fabric", ["dcp-fabric.json"], ["dcp-fabric-cells/time.log"], []),
    ("dcp-fabric --workloads allreduce,alltoall", ["dcp-fabric-ai.json"],
     ["dcp-fabric-ai-cells/time.log"], []),
    ("netrt-fabric --schemes gbn", ["netrt-fabric-gbn.json"], ["cost-cells/netrt-fabric-gbn/time.log"],
     [("netrt-fabric-paper-seed1.log", "ecmp, gbn:"), ("netrt-fabric-paper-2.log", "ecmp, gbn:"),
      ("netrt-fabric-gbn-cells/shard-2.log", "ecmp, gbn:")]),
    ("netrt-fabric --schemes gbn+pfc", ["netrt-fabric-gbn+pfc.json"], ["cost-cells/netrt-fabric-gbn+pfc/time.log"],
     [("netrt-fabric-paper-seed1.log", "ecmp, gbn+pfc:"), ("netrt-fabric-paper-2.log", "ecmp, gbn+pfc:")]),
    ("netrt-fabric --schemes irn", ["netrt-fabric-irn.json"], ["cost-cells/netrt-fabric-irn/time.log"],
     [("netrt-fabric-paper-seed1.log", "ecmp, irn:"), ("netrt-fabric-paper-2.log", "ecmp, irn:")]),
    ("netrt-fabric --schemes gbn+netrt", [],
     ["netrt-fabric-gbn+netrt-cells/shard-1.log", "netrt-fabric-gbn+netrt-cells/shard-2.log",
      "cost-cells/netrt-fabric-gbn+netrt-seed1/time.log"],
     [("netrt-fabric-paper-seed1.log", "ecmp, gbn+netrt:"), ("netrt-fabric-paper-2.log", "ecmp, gbn+netrt:"),
      ("netrt-fabric-gbn+netrt-cells/shard-1.log", "ecmp, gbn+netrt:"),
      ("netrt-fabric-gbn+netrt-cells/shard-2.log", "ecmp, gbn+netrt:")]),
    ("netrt-multipath-fabric --duration 2ms", [], ["netrt-multipath-fabric-2ms-cells/time.log"], []),
]

CELL_TIME = re.compile(r"^cell (\d+): ([\d.]+) user ([\d.]+) sys ([\d.]+) wall (\d+) KB")
SHARD_TIME = re.compile(r"wall=([\d.]+)_user=([\d.]+)_sys=([\d.]+)_maxrss=(\d+)KB")
GNU_TIME = {
    "user": re.compile(r"User time \(seconds\): ([\d.]+)"),
    "sys": re.compile(r"System time \(seconds\): ([\d.]+)"),
    "wall": re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)"),
    "kb": re.compile(r"Maximum resident set size \(kbytes\): (\d+)"),
}
PROGRESS = re.compile(r"\((?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)\)\s*$")
SEED = re.compile(r": seed (\d+),")
CI_LINE = re.compile(r"^(\S+) wall ([\d.]+) s user ([\d.]+) s sys ([\d.]+) s maxrss (\d+) KB")


def read(path):
    with open(os.path.join(HERE, path), encoding="utf-8") as f:
        return f.read()


def clock(s):
    """Seconds of an h:mm:ss or m:ss string."""
    secs = 0.0
    for part in s.split(":"):
        secs = secs * 60 + float(part)
    return secs


def cpu_cells(path):
    """Per-cell (cpu seconds, peak KB) of one /usr/bin/time log, and whether
    it times the whole run rather than one cell. path may be (path, first,
    last): only cells first to last of a set another row names in whole
    (a subset run earlier on its own, its cells those of the larger set)."""
    first, last = 0, 1 << 30
    if isinstance(path, tuple):
        path, first, last = path
    text = read(path)
    cells = [(float(m[2]) + float(m[3]), int(m[5]))
             for m in (CELL_TIME.match(l) for l in text.splitlines())
             if m and first <= int(m[1]) <= last]
    cells += [(float(m[2]) + float(m[3]), int(m[4])) for m in SHARD_TIME.finditer(text)]
    if cells:
        return cells, False
    got = {k: r.search(text) for k, r in GNU_TIME.items()}
    if all(got.values()):
        return [(float(got["user"][1]) + float(got["sys"][1]), int(got["kb"][1]))], True
    return [], False


def busy_walls(record, by_seed):
    """(cell, wall seconds) of a record's runs that kept their wall_ns; a
    cell is its seed (the record's repeat) and, unless by_seed, its point."""
    d = json.loads(read(record))
    out = []
    for r in d.get("runs", []):
        wall = r.get("fabric", {}).get("wall_ns", 0)
        if wall > 0:
            key = r["repeat"] if by_seed else (r["repeat"], json.dumps(r["point"], sort_keys=True))
            out.append((key, wall / 1e9))
    return out


def progress_walls(path, pick):
    """(seed, wall seconds) of a progress log's finished cells whose line
    holds pick."""
    out = []
    for line in read(path).splitlines():
        m, seed = PROGRESS.search(line), SEED.search(line)
        if pick in line and m and seed and "another shard" not in line:
            h, mi, s = (float(x) if x else 0.0 for x in m.groups())
            out.append((int(seed[1]), h * 3600 + mi * 60 + s))
    return out


def span(xs):
    return "%.1f–%.1f" % (min(xs), max(xs)) if xs else "–"


def row(name, records, logs, progress):
    cpu, whole = [], False
    for p in logs:
        c, w = cpu_cells(p)
        cpu += c
        whole = whole or w
    # A cell run more than once (netrt-fabric's seed 1) counts once, at its
    # shortest wall: the tightest bound. Sets with progress logs are one
    # point each, so there a cell is its seed.
    walls = []
    for r in records:
        walls += busy_walls(r, bool(progress))
    for p, pick in progress:
        walls += progress_walls(p, pick)
    cell = {}
    for k, w in walls:
        cell[k] = min(w, cell.get(k, w))
    busy = list(cell.values())
    cols = [name]
    if cpu:
        secs = [c for c, _ in cpu]
        cols += ["%d" % len(cpu) if not whole else "whole run", "%.1f" % sum(secs),
                 "–" if whole else span(secs), "%d" % max(kb for _, kb in cpu)]
    else:
        cols += ["0", "not measured", "–", "–"]
    cols += ["%d" % len(busy), "%.1f" % sum(busy) if busy else "–", span(busy)]
    names = [p if isinstance(p, str) else "%s (cells %d–%d)" % p for p in logs]
    cols.append(", ".join(dict.fromkeys(names + records + [p for p, _ in progress])) or "–")
    return cols


def ci_rows():
    rows = []
    for line in read("ci-wall-times-2.txt").splitlines():
        m = CI_LINE.match(line)
        if m:
            rows.append([m[1], m[2], "%.2f" % (float(m[3]) + float(m[4])), m[5]])
    return rows


def table(head, rows, out):
    out.write("| " + " | ".join(head) + " |\n")
    out.write("| " + " | ".join("---" for _ in head) + " |\n")
    for r in rows:
        out.write("| " + " | ".join(r) + " |\n")


def main(out=sys.stdout):
    out.write("# cpu-times.py: paper-scale cells' CPU time (user + system, /usr/bin/time) and busy wall\n")
    out.write("# (records' wall_ns, progress lines; an upper bound on CPU, not a wall time to quote).\n\n")
    table(["set (torsim run …)", "cells timed", "CPU s, sum", "CPU s a cell", "peak KB",
           "cells with busy wall", "busy wall s, sum", "busy wall s a cell", "sources"],
          [row(*s) for s in SETS], out)
    q = read("netrt-incast-quiet-time.txt")
    m = GNU_TIME["wall"].search(q)
    out.write("\nQuiet wall, paper scale: netrt-incast %.2f s (netrt-incast-quiet-time.txt).\n\n" % clock(m[1]))
    out.write("Quiet wall, ci scale (ci-wall-times-2.txt):\n\n")
    table(["experiment --scale ci", "wall s", "CPU s", "peak KB"], ci_rows(), out)


if __name__ == "__main__":
    main()
