#!/bin/sh
# irn-fabric with the seed's switch scheduling (seed 004 §4.1: "input-queued with virtual output
# ports, that are scheduled using round-robin"): --voq gives every switch port a data queue per
# input port, served round robin (egress.by_input), 240 KB each, against irn-fabric.json without it
# (docs/experiments.md, "Figs. 1 and 2: what moves them").
# One cell a process, two at a time, GOMAXPROCS=1, each cell's CPU in DIR/time.log; then merge-run
# writes the record. Run from the repository's root; TORSIM is torsim's path.
set -e
D=docs/results/fabric/irn-fabric-voq
T=${TORSIM:-torsim}
set_() { # NAME FLAGS...; a set whose record is there is not run again
  name=$1; shift
  [ -f $D/$name.json ] && return
  mkdir -p $D/$name
  N=$($T run irn-fabric "$@" --count-cells | awk '/ cells$/{print $2}')
  seq 0 $((N-1)) | xargs -P 2 -I @ sh -c "GOMAXPROCS=1 /usr/bin/time -a -o $D/$name/time.log -f 'cell @: %U user %S sys %e wall %M KB' \
    $T run irn-fabric $* --shard @/$N --cells $D/$name/cells >/dev/null 2>&1"
  $T merge-run irn-fabric "$@" --cells $D/$name/cells --record $D/$name.json --md $D/$name.md >/dev/null
}
set_ irn-fabric-voq --voq
# The other bound of the seed's 240 KB per input port, shared by that input's queues (rocetor keeps
# a budget per queue): 48 KB a queue, a port's 240 KB among its five other inputs, for the lossy
# cells (the PFC cells' queues hold the switch either way: the set above has them).
set_ irn-fabric-voq-48k --voq --schemes irn,roce --queue 48KB
# The seed's switches themselves, for the lossy cells: a queue per input port, and each input port's
# frames within 240 KB across its queues (egress.input_limit). Not the PFC cells: their pause, at
# 220 KB, leaves less than the frames a paused peer still sends before an input's 240 KB, so they
# would drop (the first set's PFC cells, each input paused at 220 KB, are the seed's lossless switch).
set_ irn-fabric-voq-input240k --voq --input-buffer 240KB --schemes irn,roce
