#!/bin/sh
# five-way at a background load above its default 0.24: one cell a process, two at a time,
# GOMAXPROCS=1, each cell's CPU in DIR/time.log (docs/results/fabric/cellset.sh), then the record
# again with its plots. Run from the repository's root; TORSIM is torsim's path.
set -e
. docs/results/fabric/cellset.sh
D=docs/results/fabric/five-way-load
cellset $D five-way-load50 five-way --load 0.5
${TORSIM:-torsim} merge-run five-way --load 0.5 --plot $D/five-way-load50 --cells $D/five-way-load50/cells \
  --record $D/five-way-load50.json --md $D/five-way-load50.md >/dev/null
