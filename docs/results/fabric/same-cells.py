#!/usr/bin/env python3
"""Compare two records of one fabric experiment cell by cell.

    python3 same-cells.py RECORD.json OTHER.json

Prints how many cells (point and seed) the two records share and which
of the shared cells' fields differ. Each cell's wall_ns is left out (a
machine's time, not the simulation's), and where a field is an object
(host_counters, stages) only the keys both records have are compared:
a counter added since the older record was made is not a difference.
Used to check that a re-run of a recorded set (cost-cells/) simulated
the same thing as the record. Standard library only.
"""

import json
import sys


def runs(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for r in json.load(f)["runs"]:
            key = (json.dumps(r["point"], sort_keys=True), r["repeat"])
            fab = dict(r["fabric"])
            fab.pop("wall_ns", None)
            out[key] = fab
    return out


def differences(x, y):
    for key in sorted(set(x) & set(y)):
        a, b = x[key], y[key]
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) & set(b)):
                if a[k] != b[k]:
                    yield key + "." + k
        elif a != b:
            yield key


def main(a_path, b_path):
    a, b = runs(a_path), runs(b_path)
    common = sorted(set(a) & set(b))
    diff = [(k, f) for k in common for f in differences(a[k], b[k])]
    print("%s vs %s: %d common cells (%d, %d), %d differing fields" % (a_path, b_path, len(common), len(a), len(b), len(diff)))
    for (point, seed), field in diff[:20]:
        print("  seed %d %s: %s" % (seed, point, field))
    return 1 if diff else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
