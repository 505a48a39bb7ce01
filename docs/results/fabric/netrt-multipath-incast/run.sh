#!/bin/sh
# Fig. 9's own shape on rocetor's fabric: 15 servers of the first ToR send
# 1 MB each at once to a server of the second, over 1, 2, 4 and 8 cores,
# with 1 MiB egress queues (netrt-fabric's lossy fabric) and 16 MiB (no
# loss: all 15 MB fit), three seeds. TORSIM=/tmp/torsim sh run.sh
set -eu
T=${TORSIM:-torsim}
for q in 1MiB:1048576 16MiB:16777216; do
  for c in 1 2 4 8; do
    n=q${q%%:*}-cores$c
    [ -f "$n.json" ] && continue
    /usr/bin/time -f "$n %e s %M KB" "$T" run netrt-multipath-fabric --incast 15 --fabric 2,$c,16 --queue ${q#*:} \
      --record "$n.json" --md "$n.md" > "$n.log" 2>> time.log
  done
done
