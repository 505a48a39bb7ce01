#!/bin/bash
# run2.sh was stopped after maxsize0's cell 1 (its queue480k set not begun) to run the sets below
# first; maxsize0 goes on with run2.sh's binary, whose cells it merges with.
# $1: run2.sh's torsim binary; $2: the cells directory; $3: where the flow files go; $4: the build
# with --no-timeout-recovery, for the sets begun here.
T2=$1; D=$2; F=$3; T=$4
cells() { # binary, name, cell count, flags...
  local bin=$1 name=$2 n=$3; shift 3
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" nice -n 19 $bin run irn-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
}
mkdir -p $F/dcqcn-ecn-q1440k-norec $F/timely-rto-q1440k
# Row 1's diagnostic: IRN's expiries resend nothing, all else as dcqcn-ecn-q1440k.
cells $T dcqcn-ecn-q1440k-norec 3 --cc dcqcn --ecn 5KB-200KB-1 --schemes irn --queue 1440KB --no-timeout-recovery --flows $F/dcqcn-ecn-q1440k-norec
# Row 4's one change: TIMELY, RTOs ×10, IRN given IRN + PFC's 1,440 KB queues.
cells $T timely-rto-q1440k 3 --schemes irn --cc timely --rto-high 3.2ms --rto-low 1ms --queue 1440KB --flows $F/timely-rto-q1440k
# Row 2's one-change sets: the 3 MB cap lifted, the lossy queue doubled.
# (stopped after timely-rto-q1440k: run4.sh does the rest)
cells $T2 maxsize0 6 --schemes irn,roce+pfc --gbn-window 0 --max-size 0
cells $T queue480k 3 --schemes irn --queue 480KB
# Fig. 2 with the seed's text's sizes at 30 ms, where IRN drops 8.59 % of its data packets
# (irn-fabric-drops.md), one seed (a cell costs about two minutes of CPU).
cells $T cdf-30ms 2 --schemes irn,irn+pfc --cdf docs/results/fabric/irn-seed-sizes.txt --duration 30ms --seeds 1
