#!/bin/bash
# After run.sh's first three sets (its a2a-window cell 2 included): DCP's AllToAll is the same in
# every seed (adaptive routing; the seed moves only ECMP's hash: dcp-fabric-ai.md's 3.301 ms in
# all three, and run.sh's window cells 0-2), so the 256 KiB threshold runs seed 1 alone; then
# DCP's WebSearch at 0.5 with the window at --scale paper's 1 ms, three seeds.
T=$1; D=$2
cells() { # name, cell count, flags...
  local name=$1 n=$2; shift 2
  mkdir -p $D/$name
  for k in $(seq 0 $((n-1))); do
    [ -f $D/$name/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -f "$name cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run dcp-fabric "$@" --shard $k/$n --cells $D/$name >> $D/$name/shard.log 2>> $D/time.log
  done
}
cells a2a-trim256k 1 --workloads alltoall --schemes dcp --trim-threshold 256KiB --seeds 1
cells ws1ms-window 3 --workloads websearch --loads 0.5 --schemes dcp --dcp-window 110
# then both changes together, seed 1: what the window costs where nothing is trimmed
cells a2a-window-trim256k 1 --workloads alltoall --schemes dcp --dcp-window 110 --trim-threshold 256KiB --seeds 1
