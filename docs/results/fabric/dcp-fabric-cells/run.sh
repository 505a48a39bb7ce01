#!/bin/bash
# dcp-fabric paper scale, one cell a process so that finished cells survive a stop.
for k in $(seq 0 44); do
  [ -f /tmp/dcpf/cell-$k.json ] && continue
  /usr/bin/time -f "cell $k: %U user %S sys %e wall %M KB" /tmp/torsim-dcpf run dcp-fabric --shard $k/45 --cells /tmp/dcpf >> /tmp/dcpf/shard.log 2>> /tmp/dcpf/time.log
done
