#!/usr/bin/env python3
"""Compare two irn-fabric cells flow by flow (their --flows files).

    python3 compare.py A.txt B.txt

A and B ran the same flows (same seed) with one change. Splits the flows
by whether A's sender timed out on them, and for each part and size bin
prints the flows, their mean slowdown in A and in B, and the share of
the difference in the sum of slowdowns (B minus A) that part carries.
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
            out[(src, dst, size, start)] = (size, max(1.0, fct / ideal) if ideal > 0 else 1.0, retx, tos, fct)
    return out


def binof(size):
    for i, b in enumerate(BINS):
        if size < b:
            return i
    return len(BINS)


def main(a_path, b_path):
    a, b = read(a_path), read(b_path)
    keys = sorted(set(a) & set(b))
    total = sum(b[k][1] - a[k][1] for k in keys)
    print("%d flows in both (%d, %d); mean slowdown A %.3f, B %.3f; sum of slowdowns B - A %.1f"
          % (len(keys), len(a), len(b), sum(a[k][1] for k in keys) / len(keys), sum(b[k][1] for k in keys) / len(keys), total))
    print("part | bin | flows | A mean slowdown | B mean slowdown | B - A summed | share")
    for part, sel in (("timed out in A", lambda k: a[k][3] > 0), ("not timed out in A", lambda k: a[k][3] == 0)):
        for bn in list(range(len(BINS) + 1)) + ["all"]:
            ks = [k for k in keys if sel(k) and (bn == "all" or binof(a[k][0]) == bn)]
            if not ks:
                continue
            d = sum(b[k][1] - a[k][1] for k in ks)
            name = bn if bn == "all" else ("<%d" % BINS[0] if bn == 0 else ">=%d" % BINS[bn - 1])
            print("%s | %s | %d | %.2f | %.2f | %.1f | %.0f %%" % (part, name, len(ks), sum(a[k][1] for k in ks) / len(ks),
                  sum(b[k][1] for k in ks) / len(ks), d, 100 * d / total if total else 0))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
