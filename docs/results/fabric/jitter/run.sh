#!/bin/sh
# The paper-scale sets again with one frame time of jitter on every port (torsim run --jitter:
# a 1 KB frame and its headers at the host rate: 221 ns at irn-fabric's 40 Gbit/s, 88 ns at
# dcp-fabric's, five-way's, llr-fabric's and fasr-scale's 100, 177 ns at netrt-incast's and netrt-fabric's 50), against their records without
# (docs/experiments.md, "Jitter").
# One cell a process, two at a time, GOMAXPROCS=1, each cell's CPU in DIR/time.log; then
# merge-run writes the record. Run from the repository's root; TORSIM is torsim's path.
set -e
D=docs/results/fabric/jitter
T=${TORSIM:-torsim}
set_() { # NAME JITTER FLAGS...; a set whose record is there is not run again
  name=$1 j=$2; shift 2
  [ -f $D/$name.json ] && return
  mkdir -p $D/$name
  N=$($T run "$@" --jitter $j --count-cells | awk '/ cells$/{print $2}')
  seq 0 $((N-1)) | xargs -P 2 -I K sh -c "GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f 'cell K: %U user %S sys %e wall %M KB' \
    $T run $* --jitter $j --shard K/$N --cells $D/$name/cells >/dev/null 2>&1"
  $T merge-run "$@" --jitter $j --cells $D/$name/cells --record $D/$name.json --md $D/$name.md >/dev/null
}
set_ irn-fabric 221ns irn-fabric
set_ five-way-3seeds 88ns five-way --seeds 3
set_ dcp-fabric 88ns dcp-fabric
set_ netrt-incast 177ns netrt-incast
set_ llr-fabric 88ns llr-fabric
set_ fasr-scale 88ns fasr-scale
set_ netrt-fabric-gbn+pfc 177ns netrt-fabric --schemes gbn+pfc
set_ netrt-fabric-irn 177ns netrt-fabric --schemes irn
# netrt-fabric's lossy cells, 15-18 min of CPU each without jitter: both sets' six cells share
# one xargs, so that neither core waits on a set's odd cell.
lossy() { # JITTER
  for s in gbn gbn+netrt; do
    [ -f $D/netrt-fabric-$s.json ] && continue
    mkdir -p $D/netrt-fabric-$s
    for k in 0 1 2; do echo "$s $k"; done
  done | xargs -P 2 -L 1 sh -c "GOMAXPROCS=1 /usr/bin/time -a -o $D/netrt-fabric-\$0/time.log -f \"cell \$1: %U user %S sys %e wall %M KB\" \
    $T run netrt-fabric --schemes \$0 --jitter $1 --shard \$1/3 --cells $D/netrt-fabric-\$0/cells >/dev/null 2>&1"
  for s in gbn gbn+netrt; do
    [ -f $D/netrt-fabric-$s.json ] && continue
    $T merge-run netrt-fabric --schemes $s --jitter $1 --cells $D/netrt-fabric-$s/cells \
      --record $D/netrt-fabric-$s.json --md $D/netrt-fabric-$s.md >/dev/null
  done
}
lossy 177ns
