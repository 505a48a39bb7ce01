#!/bin/sh
# netrt-incast: how each loss came to light at the destination ToR (the netrt_dst Miss counters),
# GBN + NetRT at 15 and 40 senders, seeds 1-3, and one-change sets (docs/experiments.md, netrt-incast).
# Usage: run.sh NAME [FLAGS...]; TORSIM is torsim's path. One cell a process, CPU times in NAME/time.log.
set -e
D=docs/results/fabric/netrt-incast-miss-cells
T=${TORSIM:-torsim}
name=$1; shift
mkdir -p $D/$name
N=$($T run netrt-incast "$@" --count-cells | awk '/ cells$/{print $2}')
for k in $(seq 0 $((N-1))); do
  GOMAXPROCS=1 nice -n 19 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" \
    $T run netrt-incast "$@" --shard $k/$N --cells $D/$name/cells >/dev/null
done
$T merge-run netrt-incast "$@" --cells $D/$name/cells --record docs/results/fabric/netrt-incast-$name.json --md docs/results/fabric/netrt-incast-$name.md >/dev/null
