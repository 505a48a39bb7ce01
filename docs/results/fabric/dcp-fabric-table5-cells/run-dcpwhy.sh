#!/bin/bash
# Issue 29's open points of dcp-fabric: at 255-to-1 (Fig. 16's cells, DCP only, three
# seeds) one change at a time — the trim threshold 256 KiB, DCP's window 110, DCQCN marking below the
# trim threshold — then DCP's AllToAll (seeds 2-3) and AllReduce at 256 KiB, then Table 5's N = 16
# with DCQCN at 200 us. One cell a process, GOMAXPROCS=1 at nice 19; CPU per cell into time.log.
T=$1; D=$2; W=$3   # torsim, this folder, dcp-fabric-window-cells
cells() { # dir, cell count, flags...
  local dir=$1 n=$2; shift 2
  mkdir -p $dir
  for k in $(seq 0 $((n-1))); do
    [ -f $dir/cell-$k.json ] && continue
    GOMAXPROCS=1 /usr/bin/time -f "$(basename $dir) cell $k: %U user %S sys %e wall %M KB" nice -n 19 $T run dcp-fabric "$@" --shard $k/$n --cells $dir >> $dir/shard.log 2>> $D/time.log
  done
}
cells $D/dcp-fabric-incast255-trim256k 6 --workloads incast --incast 255 --schemes dcp --trim-threshold 256KiB
cells $D/dcp-fabric-incast255-window110 6 --workloads incast --incast 255 --schemes dcp --dcp-window 110
cells $D/dcp-fabric-incast255-ecn16k 3 --workloads incast --incast 255 --schemes dcp --cc dcqcn --ecn 16KiB-60KiB
# seed 1 again too (a2a-trim256k's cell-0 was made with --seeds 1, so merge-run would refuse it)
cells $W/a2a-trim256k-3seeds 3 --workloads alltoall --schemes dcp --trim-threshold 256KiB
cells $W/ar-trim256k 3 --workloads allreduce --schemes dcp --trim-threshold 256KiB
for inc in 128 255; do
  GOMAXPROCS=1 /usr/bin/time -f "t5-$inc-n16-dcqcn: %U user %S sys %e wall %M KB" nice -n 19 $T run dcp-fabric --schemes dcp --workloads incast --incast-bg 0.3 --duration 200us --seeds 1 --incast $inc --incast-degree 16 --cc dcqcn --record $D/../dcp-fabric-table5-200us-$inc-n16-dcqcn.json --md $D/../dcp-fabric-table5-200us-$inc-n16-dcqcn.md >> $D/t5-n16-dcqcn.log 2>> $D/time.log
done
