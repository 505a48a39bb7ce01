#!/bin/sh
# llr-fabric's blocking cells at paper scale (seeds 1-3), which recorded the
# reorder buffer's 222 KB peak, rerun with llr's head-of-line wait record
# (llr.PortStats.HeadWait*): tord's notice_retry (ack_timeout/4, 250 µs) and
# one change, notice_retry 5 µs (twice the 2.2 µs the longest normal recovery took). One cell a process, its CPU time in
# VARIANT/time.log; the records are ../llr-fabric-blocking-VARIANT.{json,md}.
# TORSIM is torsim's path.
set -e
D=${1:-docs/results/fabric/llr-fabric-headwait-cells}
T=${TORSIM:-torsim}
for v in ${VARIANTS:-default 5us}; do
  F="--modes blocking"
  [ "$v" = default ] || F="$F --notice-retry $v"
  mkdir -p "$D/$v"
  for k in 0 1 2; do
    GOMAXPROCS=1 nice -n 19 /usr/bin/time -a -o "$D/$v/time.log" -f "cell $k: %U user %S sys %e wall %M KB" \
      $T run llr-fabric $F --shard $k/3 --cells "$D/$v/cells"
  done
  $T merge-run llr-fabric $F --cells "$D/$v/cells" --record "$D/../llr-fabric-blocking-$v.json" --md "$D/../llr-fabric-blocking-$v.md"
done
