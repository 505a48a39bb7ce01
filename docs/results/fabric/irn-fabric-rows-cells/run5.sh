#!/bin/bash
# After run4.sh: Fig. 1's ratio grew with the simulated time (3 ms 1.56, 10 ms 2.14): IRN and
# RoCE + PFC uncapped at 30 ms, three seeds.
# $1: the torsim binary; $2: the cells directory.
T=$1; D=$2
cells() { # name, cell count, flags...
  local name=$1 n=$2; shift 2
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run irn-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
}
cells 30ms 6 --schemes irn,roce+pfc --gbn-window 0 --duration 30ms
