#!/bin/bash
# After run.sh, with the build that keeps each cell's slowest flows and writes flow files (--flows):
# row 1 (DCQCN at the paper's marking, 1,440 KB queues: IRN with its timeouts and without), row 4
# (TIMELY with IRN's RTOs ×10 beside IRN + PFC), row 2's one-change sets (the 3 MB cap, the queue).
# $1: the torsim binary; $2: the cells directory; $3: where the flow files go.
T=$1; D=$2; F=$3
cells() { # name, cell count, flags...
  local name=$1 n=$2; shift 2
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run irn-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
}
ECN="--cc dcqcn --ecn 5KB-200KB-1 --schemes irn --queue 1440KB"
mkdir -p $F/dcqcn-ecn-q1440k $F/dcqcn-ecn-q1440k-norto $F/timely-rto
cells dcqcn-ecn-q1440k 3 $ECN --flows $F/dcqcn-ecn-q1440k
cells dcqcn-ecn-q1440k-norto 3 $ECN --rto-high 1s --rto-low 1s --flows $F/dcqcn-ecn-q1440k-norto
cells timely-rto 6 --schemes irn,irn+pfc --cc timely --rto-high 3.2ms --rto-low 1ms --flows $F/timely-rto
cells maxsize0 6 --schemes irn,roce+pfc --gbn-window 0 --max-size 0   # stopped after cell 1: run3.sh
# (queue480k: run3.sh)
