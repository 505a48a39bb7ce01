#!/bin/sh
# netrt-fabric's four schemes at paper scale, three seeds, in one record (netrt-fabric.json): the
# per-scheme records before it predate the ideal-FCT fix (their slowdowns are wrong; FCTs and
# counters right) and GBN + NetRT's paper-scale cells had no record but their shard logs. One cell
# a process, two at a time, GOMAXPROCS=1; each cell's CPU in netrt-fabric/time.log. Run from the
# repository's root; TORSIM is torsim's path.
set -e
D=docs/results/fabric/rerun-cells/netrt-fabric
T=${TORSIM:-torsim}
mkdir -p $D
N=$($T run netrt-fabric --count-cells | awk '/ cells$/{print $2}')
[ "$N" = 12 ] || { echo "netrt-fabric has $N cells, this script orders 12" >&2; exit 1; }
# The slowest cells first (GBN + NetRT's 3, 7, 11, then GBN's), so that neither core waits long at the end.
echo 3 7 11 0 4 8 1 5 9 2 6 10 | tr ' ' '\n' | \
  xargs -P 2 -I @ sh -c "GOMAXPROCS=1 /usr/bin/time -a -o $D/time.log -f 'cell @: %U user %S sys %e wall %M KB' \
    $T run netrt-fabric --shard @/$N --cells $D/cells >/dev/null 2>&1"
$T merge-run netrt-fabric --cells $D/cells --record docs/results/fabric/netrt-fabric.json --md docs/results/fabric/netrt-fabric.md >/dev/null
