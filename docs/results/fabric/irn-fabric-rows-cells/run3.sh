#!/bin/bash
# After run2.sh: Fig. 2 with the seed's text's sizes at 30 ms, where IRN drops 8.59 % of its data
# packets (irn-fabric-drops.md), one seed (a cell costs about two minutes of CPU).
T=$1; D=$2
cells() { # name, cell count, flags...
  local name=$1 n=$2; shift 2
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run irn-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
}
cells cdf-30ms 2 --schemes irn,irn+pfc --cdf docs/results/fabric/irn-seed-sizes.txt --duration 30ms --seeds 1
