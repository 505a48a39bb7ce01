#!/bin/bash
# One change at a time: gbn+netrt, 3 seeds, one cell a process, at nice 19, one process at a time.
# $1: the multipath choice; $2: the changes file (lines "name yaml"). They ran, in order:
#   run.sh ecmp changes-ecmp.txt; run.sh adaptive changes-adaptive.txt; run.sh adaptive changes-adaptive2.txt;
#   run.sh ecmp changes-ecmp2.txt; run.sh adaptive changes-adaptive3.txt; run.sh adaptive changes-adaptive4.txt
# then, for each NAME and YAML (MP its multipath choice):
#   torsim merge-run netrt-multipath-fabric --duration 2ms --multipath MP --schemes gbn+netrt --netrt "YAML" \
#     --cells NAME/cells --record netrt-multipath-fabric-2ms-NAME.json --md netrt-multipath-fabric-2ms-NAME.md
# time.log also holds the free-form runs of ../netrt-multipath-fabric-2ms-adapt-measured/.
mp=$1; changes=$(realpath $2)
cd /tmp/adapt
run() { # name yaml
  name=$1; yaml=$2
  mkdir -p $name
  for k in 0 1 2; do
    [ -f $name/done-$k ] && continue
    GOMAXPROCS=1 /usr/bin/time -a -o time.log -f "$name cell $k: %U user %S sys %e wall %M KB" nice -n 19 /tmp/torsim-adapt run netrt-multipath-fabric --duration 2ms --multipath $mp --schemes gbn+netrt ${yaml:+--netrt "$yaml"} --shard $k/3 --cells $name/cells >> $name/shard.log 2>&1 && touch $name/done-$k
  done
}
while read name yaml; do run "$name" "$yaml"; done < $changes
