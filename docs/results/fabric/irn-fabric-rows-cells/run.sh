#!/bin/bash
# irn-fabric's index rows (issue 29; docs/experiments.md, "## irn-fabric" and "### DCQCN and TIMELY"):
# one cell a process, --shard K/N --cells DIR, GOMAXPROCS=1 at nice 19, CPU per cell in time.log;
# then torsim merge-run with the same flags. Cell JSONs are not committed (the records are).
# $1: the torsim binary; $2: the cells directory (one subdirectory a set).
T=$1; D=$2
cells() { # name, cell count, flags...
  local name=$1 n=$2; shift 2
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run irn-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
}
SEED=docs/results/fabric/irn-seed-sizes.txt
# Figs. 1 and 2 with the seed's text's sizes: IRN, IRN + PFC and RoCE + PFC uncapped, three seeds.
cells cdf 9 --schemes irn,irn+pfc,roce+pfc --gbn-window 0 --cdf $SEED
