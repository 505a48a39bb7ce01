#!/bin/bash
# One change at a time: gbn+netrt, 3 seeds, one cell a process.
# $1: the multipath choice (default spray); $2: the changes file (default changes.txt).
# The spray sets ran as `run.sh`, the adaptive one as `run.sh adaptive changes2.txt`.
mp=${1:-spray}; changes=$(realpath ${2:-changes.txt})
cd /tmp/mpwhy
run() { # name yaml
  name=$1; yaml=$2
  mkdir -p $name
  for k in 0 1 2; do
    [ -f $name/done-$k ] && continue
    GOMAXPROCS=1 /usr/bin/time -f "$name cell $k: %U user %S sys %e wall %M KB" nice -n 19 /tmp/torsim-mpwhy run netrt-multipath-fabric --duration 2ms --multipath $mp --schemes gbn+netrt ${yaml:+--netrt "$yaml"} --shard $k/3 --cells $name/cells >> $name/shard.log 2>> time.log && touch $name/done-$k
  done
}
while read name yaml; do run "$name" "$yaml"; done < $changes
