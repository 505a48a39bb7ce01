#!/bin/bash
# run3.sh was stopped after its timely-rto-q1440k set to run row 1's ACK-coalescing pair first;
# then run3.sh's remaining sets.
# $1: run2.sh's torsim binary (maxsize0's); $2: the cells directory; $3: where the flow files go;
# $4: the build with --irn-ack-every, for the sets begun here.
T2=$1; D=$2; F=$3; T=$4
cells() { # binary, name, cell count, flags...
  local bin=$1 name=$2 n=$3; shift 3
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" nice -n 19 $bin run irn-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
}
ECN="--cc dcqcn --ecn 5KB-200KB-1 --schemes irn --queue 1440KB"
mkdir -p $F/dcqcn-ecn-q1440k-ack1 $F/dcqcn-ecn-q1440k-norto-ack1
# Row 1: does a spurious expiry's help come from the ACKs its resends draw? The receiver ACKs
# every packet, with IRN's timeouts and without.
cells $T dcqcn-ecn-q1440k-ack1 3 $ECN --irn-ack-every 1 --flows $F/dcqcn-ecn-q1440k-ack1
cells $T dcqcn-ecn-q1440k-norto-ack1 3 $ECN --irn-ack-every 1 --rto-high 1s --rto-low 1s --flows $F/dcqcn-ecn-q1440k-norto-ack1
# run3.sh's rest.
cells $T2 maxsize0 6 --schemes irn,roce+pfc --gbn-window 0 --max-size 0
cells $T queue480k 3 --schemes irn --queue 480KB
cells $T cdf-30ms 2 --schemes irn,irn+pfc --cdf docs/results/fabric/irn-seed-sizes.txt --duration 30ms --seeds 1
