#!/bin/bash
# Issue 29, dcp-fabric's open index rows (Fig. 13 at 0.3, Fig. 14's AllReduce against PFC,
# Table 5's HO loss at 255-to-1 N = 16): one cell a process, GOMAXPROCS=1 at nice 19, CPU per
# cell into time.log (beside other work). Usage: run.sh TORSIM SET CELLS K FLAGS... runs cell K
# of the set's CELLS (K "all": every one); its cells and per-flow dumps go to SET/; merge with
# torsim merge-run and the same flags.
T=$1; SET=$2; N=$3; K=$4; shift 4
D=$(cd $(dirname $0) && pwd)
mkdir -p $D/$SET/flows
ks=$K; [ "$K" = all ] && ks=$(seq 0 $((N-1)))
for k in $ks; do
  [ -f $D/$SET/cell-$k.json ] && continue
  GOMAXPROCS=1 /usr/bin/time -a -o $D/time.log -f "$SET cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run dcp-fabric "$@" --flows $D/$SET/flows --shard $k/$N --cells $D/$SET >> $D/$SET/shard.log 2>&1
done
