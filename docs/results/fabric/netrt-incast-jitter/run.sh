#!/bin/sh
# netrt-incast's drop-tail lock-out (docs/experiments.md, netrt-incast): 15 and 40 senders,
# GBN and GBN + NetRT, without and with --jitter 177ns (one 1 KB frame's time at 50 Gbit/s,
# on every port), seeds 1-3, each with its drop log (--drops). TORSIM is torsim's path.
# Writes the cells beside this script, then runs.py's summary of each drop log (runs.json).
set -e
D=${1:-docs/results/fabric/netrt-incast-jitter}
T=${TORSIM:-torsim}
printf 'egress: {queue_limit: 1MiB}\necn: {}\n' > $D/gbn.yaml
printf 'egress: {queue_limit: 1MiB}\necn: {}\nnetrt: {fabric: [fabric]}\n' > $D/netrt.yaml
for n in 15 40; do
  for j in 0 177ns; do
    for seed in 1 2 3; do
      for s in gbn netrt; do
        out=$D/$s-$n-j$j-s$seed
        /usr/bin/time -a -o $D/time.log -f "$s-$n-j$j-s$seed: %U user %S sys %e wall %M KB" \
          $T --topo leafspine:leaves=$((n+1)),spines=1,hosts=1 --rate 50G --delay 500ns --fabric-delay 500ns --transport gbn --cc dcqcn \
          --rto 200us --gbn-window 489 --switch $D/$s.yaml --workload sequential-incast --incast $n --seed $seed \
          --jitter $j --drops drops.txt --out $out --quiet >/dev/null
        rm -f $out/*.png
        sed -i '/wall .* s;/d' $out/result.md
        python3 $D/runs.py --json $out/drops.txt > $out/runs.json
        # The 15-sender logs are kept (gzip); the 40-sender ones, 1 MB
        # each compressed, are made again by this script.
        if [ $n = 15 ]; then gzip -9f $out/drops.txt; else rm $out/drops.txt; fi
      done
    done
  done
done
