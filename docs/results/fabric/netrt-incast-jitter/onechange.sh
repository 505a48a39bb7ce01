#!/bin/sh
# netrt-incast under --jitter 177ns: NetRT's one-change set (as netrt-incast-miss-cells' s20 sets)
# at 15, 20 and 40 senders, seeds 1-3, beside GBN under the same jitter, and max_requests: 1
# without jitter at 15 and 40 (docs/experiments.md, netrt-incast, "The lock-out"). Cells beside
# run.sh's, named VARIANT-N-jJITTER-sSEED; a cell already there is not run again. TORSIM is
# torsim's path.
set -e
D=${1:-docs/results/fabric/netrt-incast-jitter}
T=${TORSIM:-torsim}
q='egress: {queue_limit: 1MiB}\necn: {}\n'
printf "$q" > $D/gbn.yaml
printf "${q}netrt: {fabric: [fabric]}\n" > $D/netrt.yaml
printf "${q}netrt: {fabric: [fabric], max_requests: 1}\n" > $D/netrt-maxreq1.yaml
printf "${q}netrt: {fabric: [fabric], buffer_bytes: 1}\n" > $D/netrt-buf1.yaml
printf "${q}netrt: {fabric: [fabric], k_low: 64MiB, k_high: 128MiB}\n" > $D/netrt-noca.yaml
printf "${q}netrt: {fabric: [fabric], pool_bytes: 4MiB, pool_frames: 8192}\n" > $D/netrt-pool4m.yaml
cell() { # VARIANT N JITTER SEED
  out=$D/$1-$2-j$3-s$4
  [ -f $out/result.json ] && return
  /usr/bin/time -a -o $D/time.log -f "$1-$2-j$3-s$4: %U user %S sys %e wall %M KB" \
    $T --topo leafspine:leaves=$(($2+1)),spines=1,hosts=1 --rate 50G --delay 500ns --fabric-delay 500ns --transport gbn --cc dcqcn \
    --rto 200us --gbn-window 489 --switch $D/$1.yaml --workload sequential-incast --incast $2 --seed $4 \
    --jitter $3 --out $out --quiet >/dev/null
  rm -f $out/*.png
  sed -i '/wall .* s;/d' $out/result.md
}
for n in 15 20 40; do
  for seed in 1 2 3; do
    for s in gbn netrt netrt-maxreq1 netrt-buf1 netrt-noca netrt-pool4m; do
      cell $s $n 177ns $seed
    done
  done
done
for n in 15 40; do
  for seed in 1 2 3; do
    cell netrt-maxreq1 $n 0 $seed
  done
done
