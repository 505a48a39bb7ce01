#!/bin/bash
# fasr-scale with the NICs' QP-context cache (--qpc-cache, nic.QPCache; docs/experiments.md,
# fasr-scale, "IRN's 30 %: the QP-context cache"): one cell a process, --shard K/N --cells DIR,
# GOMAXPROCS=1 at nice 19, CPU per cell in DIR/time.log; then torsim merge-run into
# docs/results/fabric/NAME.{json,md}.
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
CI="--scale ci --seeds 1"
Q5000="--qps 20000 --bytes 327680000"   # 5,000 QPs a host, 16 WRITEs of 4 KiB each
Q2560="--qps 10240 --bytes 167772160"   # 2,560 a host, 16 each
Q1280="--qps 5120 --bytes 83886080"     # 1,280 a host, 16 each
QPC="--qpc-cache 1.4MB"                 # the seed's QPC SRAM (§V-A); --qpc-miss: its 1.2 µs default
case ${4:-all} in
default) set_ fasr-scale-ci-default $CI ;;   # no cache: the recorded fasr-scale-ci.json, re-merged
esac
[ "${4:-all}" = all ] || exit 0
set_ fasr-scale-ci-5000qps-qpc $CI $Q5000 $QPC
set_ fasr-scale-ci-5000qps $CI $Q5000
set_ fasr-scale-paper-10240-irn-qpc --qps 10240 --transports irn --losses 0.01 --seeds 1 $QPC
set_ fasr-scale-ci-2560qps-qpc $CI $Q2560 $QPC
set_ fasr-scale-ci-5000qps-gbn-qpc256 $CI $Q5000 --transports gbn --qpc-cache 64KiB  # 256 GBN contexts: CX6's knee (§V-C 1)
set_ fasr-scale-ci-1280qps-qpc $CI $Q1280 $QPC
