#!/bin/sh
# five-way at a background load above its default 0.24: one cell a process, two at a time,
# GOMAXPROCS=1, each cell's CPU in DIR/time.log (docs/results/fabric/cellset.sh). Run from the
# repository's root; TORSIM is torsim's path.
set -e
. docs/results/fabric/cellset.sh
cellset docs/results/fabric/five-way-load five-way-load50 five-way --load 0.5
# the plots: torsim merge-run five-way --load 0.5 --plot DIR/five-way-load50 --cells DIR/five-way-load50/cells --record ... --md ...
