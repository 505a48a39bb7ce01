#!/bin/sh
# irn-fabric with the seed's switch scheduling (seed 004 §4.1: "input-queued with virtual output
# ports, that are scheduled using round-robin"): --voq gives every switch port a data queue per
# input port, served round robin (egress.by_input), 240 KB each, against irn-fabric.json without it
# (docs/experiments.md, "Figs. 1 and 2: what moves them").
# One cell a process, two at a time, GOMAXPROCS=1, each cell's CPU in DIR/time.log; then merge-run
# writes the record. Run from the repository's root; TORSIM is torsim's path.
set -e
. docs/results/fabric/cellset.sh
set_() { n=$1; shift; cellset docs/results/fabric/irn-fabric-voq "$n" irn-fabric "$@"; }
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
