#!/bin/bash
# Issue 29, dcp-fabric Fig. 16 at 255-to-1: where DCP's and PFC's median incast flow
# spends its time (the cells keep incastDetail's figures), then one change at a time on DCP's cells.
# One cell a process, GOMAXPROCS=1 at nice 19; CPU per cell into time.log.
T=$1; D=$2; SET=$3; N=$4; shift 4   # torsim, this folder, set name, cells, flags
mkdir -p $D/$SET
for k in $(seq 0 $((N-1))); do
  [ -f $D/$SET/cell-$k.json ] && continue
  GOMAXPROCS=1 /usr/bin/time -a -o $D/time.log -f "$SET cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run dcp-fabric "$@" --shard $k/$N --cells $D/$SET >> $D/$SET/shard.log 2>&1
done
