#!/usr/bin/python3
"""CPU time per packet of the in-memory packet-path benchmarks, two trees
side by side, for a machine too loaded for wall-clock benchmarks.

On the shared two-vCPU machine at a load average of 10, single wall-clock
runs of BenchmarkWorkerForward/plain ranged from 300 to 8000 ns/pkt; the
CPU time the benchmark process is charged (perf stat's task-clock) ranges
over about ±20 %. For each case each tree's test binary runs twice, with
fixed iteration counts N1 and N2 = 5·N1 (-test.benchtime Nx), and
(T2 − T1)/(N2 − N1) is the CPU time of one iteration without the setup,
divided by the packets per iteration (the benchmark's ns/op over its
ns/pkt). The trees alternate case by case, so both see the same load.
The binaries run with GOMAXPROCS=1: on an idle machine the runtime's
threads spinning on the other CPU are charged too, and made some
differences negative. On a quiet machine the wall-clock column is the
better figure; CPU time is for a loaded one.

Output: OUT/old-PKG.txt and OUT/new-PKG.txt in benchstat format, with the
units cpu-ns/pkt (this measure), wall-ns/pkt (what the benchmark itself
reported in the N2 run) and allocs/op. Compare with
  benchstat -filter .unit:cpu-ns/pkt OUT/old-dataplane.txt OUT/new-dataplane.txt

Usage:
  scripts/bench-cpu.py OLD_TREE NEW_TREE OUT [ROUNDS [FILTER]]

OLD_TREE and NEW_TREE are checkouts (git worktree add /tmp/old <commit>);
ROUNDS defaults to 10; FILTER keeps the cases whose name contains it. A
case a tree does not have (a benchmark added since OLD_TREE) is left out
of its file.
Needs perf and Go. docs/performance.md, "Per-core cost (issue 18)".
"""

import os
import subprocess
import sys
import time

# package, benchmark (one case, as -test.bench splits it), N1
CASES = [
    ("dataplane", "BenchmarkWorkerForward/plain$", 300000),
    ("dataplane", "BenchmarkWorkerForward/ecn=off$", 300000),
    ("dataplane", "BenchmarkWorkerForward/ecn=dequeue$", 300000),
    ("dataplane", "BenchmarkWorkerForward/ecn=enqueue$", 300000),
    ("dataplane", "BenchmarkWorkerForwardParts/harness$", 300000),
    ("dataplane", "BenchmarkWorkerForwardParts/unverified$", 300000),
    ("tor/fwd", "BenchmarkForward/baseline$", 400000),
    ("tor/pipeline", "BenchmarkPipelineForward/plain$", 100000),
    ("tor/pipeline", "BenchmarkPipelineForward/stages$", 100000),
    ("tor/fwd", "BenchmarkForward/ecmp/routes=1000$", 400000),
    ("tor/fwd", "BenchmarkForward/spray/routes=1000$", 400000),
    ("tor/netrt", "BenchmarkSrcInOrder/netrt$", 6000),
    ("tor/netrt", "BenchmarkSrcInOrder/cross$", 6000),
    ("tor/netrt", "BenchmarkSrcInOrder/shared$", 6000),
    ("tor/netrt", "BenchmarkBudgets/serial$", 5000000),
    ("tor/netrt", "BenchmarkDstInOrder/flows=1$", 3000000),
    ("tor/netrt", "BenchmarkDstInOrder/flows=10000$", 3000000),
    ("tor/trim", "BenchmarkTrim/off$", 250000),
    ("tor/trim", "BenchmarkTrim/pass$", 250000),
    ("tor/trim", "BenchmarkTrim/trim$", 250000),
    ("tor/llr", "BenchmarkLink/off$", 250000),
    ("tor/llr", "BenchmarkLink/blocking$", 250000),
    ("tor/llr", "BenchmarkLink/nb$", 250000),
]


def build(tree, pkg, binary):
    subprocess.run(["go", "test", "-c", "-o", binary, "./" + pkg], cwd=tree, check=True)


def run(tree, pkg, binary, bench, n):
    """Runs one case n times; returns task-clock ms and the result line."""
    p = subprocess.run(
        ["perf", "stat", "-x,", "-e", "task-clock", "--", binary, "-test.run", "^$",
         "-test.bench", "^" + bench, "-test.benchtime", "%dx" % n, "-test.benchmem"],
        cwd=os.path.join(tree, pkg), capture_output=True, text=True, check=True,
        env=dict(os.environ, GOMAXPROCS="1"))
    ms = float([l for l in p.stderr.splitlines() if "task-clock" in l][0].split(",")[0])
    lines = [l for l in p.stdout.splitlines() if l.startswith("Benchmark")]
    if not lines:
        return ms, None, None  # a case this tree does not have
    f = lines[-1].split()
    vals = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)}
    return ms, f[0], vals


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    trees = {"old": os.path.abspath(sys.argv[1]), "new": os.path.abspath(sys.argv[2])}
    out = sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    only = sys.argv[5] if len(sys.argv) > 5 else ""
    cases = [c for c in CASES if only in c[1]]
    os.makedirs(out, exist_ok=True)
    bins = {}
    for side, tree in trees.items():
        for pkg in sorted({c[0] for c in cases}):
            b = os.path.join(os.path.abspath(out), "%s-%s.test" % (side, os.path.basename(pkg)))
            build(tree, pkg, b)
            bins[side, pkg] = b
    for r in range(rounds):
        for pkg, bench, n1 in cases:
            for side, tree in trees.items():
                b = bins[side, pkg]
                t1, _, _ = run(tree, pkg, b, bench, n1)
                t2, name, v = run(tree, pkg, b, bench, 5 * n1)
                if name is None:
                    continue
                per_op = (t2 - t1) * 1e6 / (4 * n1)
                pkts = v["ns/op"] / v["ns/pkt"] if "ns/pkt" in v else 1.0
                with open(os.path.join(out, "%s-%s.txt" % (side, os.path.basename(pkg))), "a") as f:
                    f.write("%s\t1\t%.2f cpu-ns/pkt\t%.2f wall-ns/pkt\t%.0f allocs/op\n" % (
                        name, per_op / pkts, v.get("ns/pkt", v["ns/op"]), v.get("allocs/op", 0)))
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        print("round %d done %s, load %s" % (r + 1, time.strftime("%H:%M:%S"), load), flush=True)


if __name__ == "__main__":
    main()
