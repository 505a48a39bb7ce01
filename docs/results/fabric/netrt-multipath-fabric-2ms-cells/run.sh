#!/bin/bash
# netrt-multipath-fabric, all 18 cells at 2 ms of arrivals, one cell a process; run two of these side by side.
cd /tmp/mp2
for k in $(seq 0 17); do
  [ -f cells/cell-$k.json ] && continue
  ( flock 9; grep -q "^cell $k$" started 2>/dev/null && exit 1; echo "cell $k" >> started ) 9>lock || continue
  GOMAXPROCS=1 /usr/bin/time -f "cell $k: %U user %S sys %e wall %M KB" /tmp/torsim-mp run netrt-multipath-fabric --duration 2ms --shard $k/18 --cells cells >> shard.log 2>> time.log
done
