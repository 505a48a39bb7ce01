#!/bin/sh
# IRN at 30 senders of netrt-incast, one change at a time (docs/experiments.md, netrt-incast).
set -e
D=${1:-docs/results/fabric/netrt-incast-irn-timeouts}
T=${TORSIM:-torsim}
printf 'egress: {queue_limit: 1048576}\necn: {}\n' > $D/switch.yaml
for seed in 1 2 3; do
  for cell in "base:--rto 200us --rto-low 100us" "rto-low-200us:--rto 200us --rto-low 200us" "rto-320us:--rto 320us --rto-low 100us" "ack-every-1:--rto 200us --rto-low 100us --irn-ack-every 1" "ack-every-4:--rto 200us --rto-low 100us --irn-ack-every 4" \
    "no-cc:--rto 200us --rto-low 100us --cc none" "no-cc-ack-every-1:--rto 200us --rto-low 100us --cc none --irn-ack-every 1"; do
    name=${cell%%:*}; flags=${cell#*:}
    out=$D/$name-s$seed
    $T --topo leafspine:leaves=31,spines=1,hosts=1 --rate 50G --delay 500ns --fabric-delay 500ns --transport irn --cc dcqcn --bdp 32 \
      --switch $D/switch.yaml --workload sequential-incast --incast 30 --seed $seed --out $out $flags >/dev/null
    rm -f $out/*.png
    sed -i '/wall .* s;/d' $out/result.md
  done
done
