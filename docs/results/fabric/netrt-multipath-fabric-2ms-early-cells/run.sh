#!/bin/sh
# netrt-multipath-fabric at 2 ms of arrivals, sprayed GBN + NetRT, seeds 1-3: the Miss counters'
# cells again with the destination ToRs' ResyncsEarly: the NAKs passed on that named a PSN before the
# first the flow's entry saw (docs/experiments.md, netrt-multipath-fabric). TORSIM is torsim's path.
# One cell a process, CPU times in time.log; record ../netrt-multipath-fabric-2ms-spray-early.{json,md}.
set -e
D=docs/results/fabric/netrt-multipath-fabric-2ms-early-cells
T=${TORSIM:-torsim}
F="--duration 2ms --multipath spray --schemes gbn+netrt"
N=$($T run netrt-multipath-fabric $F --count-cells | awk '/ cells$/{print $2}')
for k in $(seq 0 $((N-1))); do
  GOMAXPROCS=1 nice -n 19 /usr/bin/time -a -o $D/time.log -f "cell $k: %U user %S sys %e wall %M KB" \
    $T run netrt-multipath-fabric $F --shard $k/$N --cells $D/cells >/dev/null
done
$T merge-run netrt-multipath-fabric $F --cells $D/cells --record docs/results/fabric/netrt-multipath-fabric-2ms-spray-early.json \
  --md docs/results/fabric/netrt-multipath-fabric-2ms-spray-early.md >/dev/null
