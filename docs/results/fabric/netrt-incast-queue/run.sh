#!/bin/sh
# netrt-incast's egress-queue table (docs/experiments.md, netrt-incast): 15 senders,
# GBN and GBN + NetRT, queues of 128 KiB to 1 MiB, seeds 1-3. TORSIM is torsim's path.
set -e
D=${1:-docs/results/fabric/netrt-incast-queue}
T=${TORSIM:-torsim}
for q in 128KiB 256KiB 512KiB 1MiB; do
  printf 'egress: {queue_limit: %s}\necn: {}\n' $q > $D/gbn-$q.yaml
  printf 'egress: {queue_limit: %s}\necn: {}\nnetrt: {fabric: [fabric]}\n' $q > $D/netrt-$q.yaml
  for seed in 1 2 3; do
    for s in gbn netrt; do
      out=$D/$s-$q-s$seed
      $T --topo leafspine:leaves=16,spines=1,hosts=1 --rate 50G --delay 500ns --fabric-delay 500ns --transport gbn --cc dcqcn \
        --rto 200us --gbn-window 489 --switch $D/$s-$q.yaml --workload sequential-incast --incast 15 --seed $seed --out $out >/dev/null
      rm -f $out/*.png
      sed -i '/wall .* s;/d' $out/result.md
    done
  done
done
