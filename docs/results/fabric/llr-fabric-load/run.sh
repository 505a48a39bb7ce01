#!/bin/sh
# llr-fabric at the loads it names: every llr-fabric record before this directory offered 24 %
# (docs/experiments.md, llr-fabric). One cell a process, two at a time, GOMAXPROCS=1, each cell's
# CPU in DIR/time.log; then merge-run writes the record. Run from the repository's root; TORSIM is
# torsim's path.
set -e
. docs/results/fabric/cellset.sh
set_() { n=$1; shift; cellset docs/results/fabric/llr-fabric-load "$n" llr-fabric "$@"; }
set_ llr-fabric-load50 --load 0.5
set_ llr-fabric-load70 --load 0.7
