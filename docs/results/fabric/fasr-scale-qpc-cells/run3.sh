#!/bin/bash
# After run2.sh: IRN just past its 2,651 contexts, 3,000 QPs a host (run.sh's set_, 16 WRITEs a QP), with the cache and without.
# $1: the torsim binary; $2: this directory; $3: docs/results/fabric.
T=$1; D=$2; R=$3
set_() { # name, flags...
  local name=$1; shift
  mkdir -p $D/$name
  local n=$($T run fasr-scale "$@" --count-cells 2>/dev/null | awk '/ cells$/{print $2}')
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 nice -n 19 /usr/bin/time -a -o $D/$name/time.log -f "cell $k: %U user %S sys %e wall %M KB" \
      $T run fasr-scale "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>&1
  done
  $T merge-run fasr-scale "$@" --cells $D/$name --record $R/$name.json --md $R/$name.md >> $D/$name/shard.log 2>&1
}
Q3000="--qps 12000 --bytes 196608000"
set_ fasr-scale-ci-3000qps-irn-qpc --scale ci --seeds 1 $Q3000 --transports irn --qpc-cache 1.4MB
set_ fasr-scale-ci-3000qps-irn --scale ci --seeds 1 $Q3000 --transports irn
