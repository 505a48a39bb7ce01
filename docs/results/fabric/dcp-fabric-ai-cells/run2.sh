#!/bin/bash
# $1: 0 or 1, the parity of the cells this process runs
for k in $(seq 6 23); do
  [ $((k % 2)) -eq $1 ] || continue
  [ -f /tmp/dcpai/cell-$k.json ] && continue
  GOMAXPROCS=1 /usr/bin/time -f "cell $k: %U user %S sys %e wall %M KB" /tmp/torsim-ai run dcp-fabric --workloads allreduce,alltoall --shard $k/24 --cells /tmp/dcpai >> /tmp/dcpai/shard-$1.log 2>> /tmp/dcpai/time.log
done
