#!/bin/bash
# dcp-fabric AllReduce/AllToAll at paper scale (20 MB a member), one cell a process so that finished cells survive a stop.
for k in $(seq 0 23); do
  [ -f /tmp/dcpai/cell-$k.json ] && continue
  GOMAXPROCS=1 /usr/bin/time -f "cell $k: %U user %S sys %e wall %M KB" /tmp/torsim-ai run dcp-fabric --workloads allreduce,alltoall --shard $k/24 --cells /tmp/dcpai >> /tmp/dcpai/shard.log 2>> /tmp/dcpai/time.log
done
