#!/bin/bash
# The DCP-window measurements (docs/experiments.md, "### A DCP window"): one cell a process,
# --shard K/N --cells DIR, GOMAXPROCS=1 at nice 19, CPU per cell in DIR/time.log; then torsim merge-run.
# Stopped during a2a-window's cell 2 (which ran to its end); run2.sh did the rest.
# $1: the torsim binary; $2: the output directory (one subdirectory of cells per set).
T=$1; D=$2
cells() { # name, cell count, flags...
  local name=$1 n=$2; shift 2
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -f "$name cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run dcp-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>> $D/time.log
  done
}
WS="--workloads websearch --loads 0.5 --duration 100us"
cells ws-base 9 $WS --schemes dcp,pfc,irn-ar
cells ws-window 3 $WS --schemes dcp --dcp-window 110
cells a2a-window 3 --workloads alltoall --schemes dcp --dcp-window 110
