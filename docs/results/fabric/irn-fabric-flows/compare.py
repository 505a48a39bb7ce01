#!/usr/bin/env python3
"""Compare two irn-fabric cells flow by flow (their --flows files).

    python3 compare.py A.txt B.txt [TOP]

A and B ran the same flows (same seed) with one change. Splits the flows
by whether their sender timed out on them in either run, and for each part and size bin
prints the flows, their mean slowdown in A and in B, and the share of
the difference in the sum of slowdowns (B minus A) that part carries;
then the TOP flows (default 10) that B slows most, with their share, and
for each the earlier flows between the same two hosts (the fabric's
flows of one pair share a QP, so a flow waits for those before it)
still running when it was posted.
Standard library only (a flow file's columns: docs/simulator.md).
"""

import gzip
import sys

BINS = [10_000, 100_000, 1_000_000, 10_000_000]


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    out = {}
    with op(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            c = line.split()
            src, dst, size, start = c[0], c[1], int(c[4]), int(c[5])
            fct, ideal, retx, tos = int(c[6]), int(c[7]), int(c[8]), int(c[9])
            out[(src, dst, size, start)] = (size, max(1.0, fct / ideal) if ideal > 0 else 1.0, retx, tos, fct, len(out))
    return out


def binof(size):
    for i, b in enumerate(BINS):
        if size < b:
            return i
    return len(BINS)


def binname(b):
    if b == 0:
        return "<%d" % BINS[0]
    if b == len(BINS):
        return ">=%d" % BINS[-1]
    return "%d-%d" % (BINS[b - 1], BINS[b])


def main(a_path, b_path):
    a, b = read(a_path), read(b_path)
    keys = sorted(set(a) & set(b))
    total = sum(b[k][1] - a[k][1] for k in keys)
    print("%d flows in both (%d, %d); mean slowdown A %.3f, B %.3f; sum of slowdowns B - A %.1f"
          % (len(keys), len(a), len(b), sum(a[k][1] for k in keys) / len(keys), sum(b[k][1] for k in keys) / len(keys), total))
    print("part | bin | flows | A mean slowdown | B mean slowdown | B - A summed | share")
    for part, sel in (("timed out in A or B", lambda k: a[k][3] + b[k][3] > 0), ("timed out in neither", lambda k: a[k][3] + b[k][3] == 0)):
        for bn in list(range(len(BINS) + 1)) + ["all"]:
            ks = [k for k in keys if sel(k) and (bn == "all" or binof(a[k][0]) == bn)]
            if not ks:
                continue
            d = sum(b[k][1] - a[k][1] for k in ks)
            name = bn if bn == "all" else binname(bn)
            print("%s | %s | %d | %.2f | %.2f | %.1f | %.0f %%" % (part, name, len(ks), sum(a[k][1] for k in ks) / len(ks),
                  sum(b[k][1] for k in ks) / len(ks), d, 100 * d / total if total else 0))


def top(a_path, b_path, n):
    a, b = read(a_path), read(b_path)
    keys = sorted(set(a) & set(b), key=lambda k: b[k][1] - a[k][1])
    total = sum(b[k][1] - a[k][1] for k in keys)
    worst = keys[-n:][::-1]
    d = sum(b[k][1] - a[k][1] for k in worst)
    print("the %d flows B slows most: B - A summed %.1f, %.0f %% of %.1f" % (n, d, 100 * d / total if total else 0, total))
    print("flow | size | A slowdown | B slowdown | A FCT ms | B FCT ms | A timeouts | B timeouts | before it on its QP, still running (flow, size, end in A, in B, ms)")
    for k in worst:
        ahead = [j for j in keys if j[:2] == k[:2] and j[3] < k[3] and j[3] + max(a[j][4], b[j][4]) > k[3]]
        print("%d | %d | %.1f | %.1f | %.2f | %.2f | %d | %d | %s" % (a[k][5], a[k][0], a[k][1], b[k][1], a[k][4] / 1e6, b[k][4] / 1e6,
              a[k][3], b[k][3], ", ".join("%d, %d B, %.2f, %.2f" % (a[j][5], a[j][0], (j[3] + a[j][4]) / 1e6, (j[3] + b[j][4]) / 1e6) for j in ahead) or "-"))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
    print()
    top(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 10)
