#!/bin/sh
# irn-fabric at the load it names: until 2026-11-30 the workload generator drew Poisson gaps from
# WebSearch's uncapped mean (1.71 MB) while capping sizes at 3 MB (mean 0.82 MB), so "70 % load"
# offered 33.5 %. These sets re-run irn-fabric with the gaps fixed (docs/experiments.md, irn-fabric).
# One cell a process, two at a time, GOMAXPROCS=1, each cell's CPU in DIR/time.log; then merge-run
# writes the record. Run from the repository's root; TORSIM is torsim's path.
set -e
. docs/results/fabric/cellset.sh
set_() { n=$1; shift; cellset docs/results/fabric/irn-fabric-load "$n" irn-fabric "$@"; }
# The default scenario, every scheme and RoCE window (irn-fabric.json's cells at 70 %).
set_ irn-fabric
# The seed's switches (irn-fabric-voq/run.sh's sets at 70 %): a data queue per input port, round
# robin; the lossy cells also with each input's frames within 240 KB across its queues.
set_ irn-fabric-voq --voq
set_ irn-fabric-voq-input240k --voq --input-buffer 240KB --schemes irn,roce
# IRN's ablations (Fig. 7).
set_ irn-fabric-ablations --schemes irn,irn-gbn,irn-nobdpfc
# DCQCN and TIMELY (Figs. 4-6).
set_ irn-fabric-cc --cc dcqcn,timely
# What might keep Fig. 1 below the paper, one change at a time (IRN and uncapped RoCE + PFC):
# 30 ms of arrivals (a fabric that is not steady grows its tail with time);
set_ irn-fabric-30ms --duration 30ms --schemes irn,roce+pfc --gbn-window 0
# the hosts' NICs: QPs interleaved packet by packet (the seed's QPs each polling the MAC) ...
set_ irn-fabric-burst1 --host-burst 1 --schemes irn,roce+pfc --gbn-window 0
# ... and four QPs a host pair, its flows taking them in turn (each its own ECMP path).
set_ irn-fabric-qps4 --qps 4 --schemes irn,roce+pfc --gbn-window 0
# PFC's resume threshold, which the seed does not give: 110 KB (half the pause) against 218 KB, for
# the PFC cells of Figs. 1 and 2 (the IRN cells irn-fabric's).
set_ irn-fabric-xon110k --pfc-xon 110KB --schemes irn+pfc,roce+pfc --gbn-window 0
# Fig. 2 with four QPs a pair (the IRN cells irn-fabric-qps4's).
set_ irn-fabric-qps4-pfc --qps 4 --schemes irn+pfc
# What rocetor can set of the seed's setup, at once: its switches (a queue per input port, round
# robin; the lossy cells' inputs within 240 KB, the PFC cells' paused at 220 KB) and four QPs a
# host pair.
set_ irn-fabric-seedlike --voq --input-buffer 240KB --qps 4 --schemes irn
set_ irn-fabric-seedlike-pfc --voq --qps 4 --schemes irn+pfc,roce+pfc --gbn-window 0
# Sixteen QPs a pair: whether four gave each flow its own.
set_ irn-fabric-qps16 --qps 16 --schemes irn,roce+pfc --gbn-window 0
# Whether the fabric settles: 100 ms of arrivals with every flow written out (flows/), so that each
# scheme's levels can be followed over the flows' start times (docs/results/fabric/irn-fabric-load/windows.py).
set_ irn-fabric-100ms --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-100ms/flows
# The same with four QPs a host pair (irn-fabric-qps4's change) at 100 ms.
set_ irn-fabric-qps4-100ms --qps 4 --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-qps4-100ms/flows
# TIMELY at 70 % without what sank it at 33.5 %: δ scaled to 40 Gbit/s links and IRN's RTOs ten
# times the seed's (RoCE + PFC runs without timeouts, so its cells are TIMELY's at δ 40).
set_ irn-fabric-timely-d40-rto --cc timely --timely-delta 40 --rto-high 3.2ms --rto-low 1ms --schemes irn,irn+pfc,roce+pfc
# Fig. 2 at 100 ms: IRN + PFC on irn-fabric-100ms's flows (its IRN cells the baseline).
set_ irn-fabric-pfc-100ms --duration 100ms --schemes irn+pfc --flows docs/results/fabric/irn-fabric-load/irn-fabric-pfc-100ms/flows
# Fig. 2 at 100 ms with the seed's switches: a queue per input port, round robin; IRN's inputs
# within 240 KB, IRN + PFC's paused at 220 KB (irn-fabric-voq-input240k's and irn-fabric-voq's).
set_ irn-fabric-voq-pfc-100ms --voq --duration 100ms --schemes irn+pfc --flows docs/results/fabric/irn-fabric-load/irn-fabric-voq-pfc-100ms/flows
set_ irn-fabric-voq-input240k-100ms --voq --input-buffer 240KB --duration 100ms --schemes irn --flows docs/results/fabric/irn-fabric-load/irn-fabric-voq-input240k-100ms/flows
# Fig. 3 and Fig. 1 with RoCE's window at IRN's cap, at 100 ms (the uncapped cells' 100 ms sets above).
set_ irn-fabric-roce110-100ms --duration 100ms --schemes roce+pfc,roce --gbn-window 110 --flows docs/results/fabric/irn-fabric-load/irn-fabric-roce110-100ms/flows
# The load, one change from irn-fabric-100ms: whether the fabric settles, and at what levels, at 65 %
# (70 % of the wire, headers and the wire's overhead counted), 60 % and 50 %.
set_ irn-fabric-load65-100ms --load 0.65 --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-load65-100ms/flows
set_ irn-fabric-load60-100ms --load 0.6 --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-load60-100ms/flows
set_ irn-fabric-load50-100ms --load 0.5 --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-load50-100ms/flows
# Fig. 2 at 65 %: IRN + PFC on irn-fabric-load65-100ms's flows (its IRN cells the baseline).
set_ irn-fabric-load65-pfc-100ms --load 0.65 --duration 100ms --schemes irn+pfc --flows docs/results/fabric/irn-fabric-load/irn-fabric-load65-pfc-100ms/flows
# Fig. 4 (DCQCN) at 65 %, IRN and uncapped RoCE + PFC.
set_ irn-fabric-load65-dcqcn-100ms --cc dcqcn --load 0.65 --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-load65-dcqcn-100ms/flows
# IRN's ablations (Fig. 7) at 65 % over 100 ms (the IRN cells irn-fabric-load65-100ms's).
set_ irn-fabric-load65-ablations-100ms --load 0.65 --duration 100ms --schemes irn-gbn,irn-nobdpfc --flows docs/results/fabric/irn-fabric-load/irn-fabric-load65-ablations-100ms/flows
# Figs. 1 and 3 with RoCE's window at 110 at 65 % over 100 ms (the IRN cells irn-fabric-load65-100ms's).
set_ irn-fabric-load65-roce110-100ms --load 0.65 --duration 100ms --schemes roce+pfc,roce --gbn-window 110 --flows docs/results/fabric/irn-fabric-load/irn-fabric-load65-roce110-100ms/flows
# TIMELY (δ 40, IRN's RTOs ten times the seed's) at 65 % over 100 ms: Figs. 4 and 5.
set_ irn-fabric-load65-timely-d40-rto-100ms --cc timely --timely-delta 40 --rto-high 3.2ms --rto-low 1ms --load 0.65 --duration 100ms --schemes irn,irn+pfc,roce+pfc --flows docs/results/fabric/irn-fabric-load/irn-fabric-load65-timely-d40-rto-100ms/flows
# Fig. 4 (DCQCN) over 100 ms at 70 %, IRN and uncapped RoCE + PFC.
set_ irn-fabric-dcqcn-100ms --cc dcqcn --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-dcqcn-100ms/flows
# What holds TIMELY down at 70 % (δ 40, IRN's RTOs ten times the seed's), IRN alone, read from TIMELY's
# counters (Timely.* in the host counters): as irn-fabric-timely-d40-rto; then one change each — no
# gradient cut (T_low above every RTT: every sample raises the rate by δ), δ ten times larger (all of
# Figs. 4 and 5's cells).
set_ irn-fabric-timely-d40-rto-irn --cc timely --timely-delta 40 --rto-high 3.2ms --rto-low 1ms --schemes irn
set_ irn-fabric-timely-d40-rto-tlow400 --cc timely --timely-delta 40 --timely '{"t_low_us":400}' --rto-high 3.2ms --rto-low 1ms --schemes irn
set_ irn-fabric-timely-d400-rto --cc timely --timely-delta 400 --rto-high 3.2ms --rto-low 1ms --schemes irn,irn+pfc,roce+pfc
# TIMELY (δ 40, IRN's RTOs ten times the seed's) at 70 % over 100 ms: Figs. 4 and 5.
set_ irn-fabric-timely-d40-rto-100ms --cc timely --timely-delta 40 --rto-high 3.2ms --rto-low 1ms --duration 100ms --schemes irn,irn+pfc,roce+pfc --flows docs/results/fabric/irn-fabric-load/irn-fabric-timely-d40-rto-100ms/flows
# DCQCN with the DCQCN paper's marking (Kmin 5 KB, Kmax 200 KB, Pmax 1 %) at 70 %: one change from
# irn-fabric-cc's DCQCN cells (the rate-derived profile).
set_ irn-fabric-dcqcn-ecn --cc dcqcn --ecn 5KB-200KB-1 --schemes irn,irn+pfc,roce+pfc
# The same over 100 ms, IRN and uncapped RoCE + PFC (Fig. 4).
set_ irn-fabric-dcqcn-ecn-100ms --cc dcqcn --ecn 5KB-200KB-1 --duration 100ms --schemes irn,roce+pfc --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-dcqcn-ecn-100ms/flows
# Fig. 3 uncapped over 100 ms at 70 %: lossy RoCE without a window (RoCE + PFC's cells irn-fabric-100ms's).
set_ irn-fabric-roce-100ms --duration 100ms --schemes roce --gbn-window 0 --flows docs/results/fabric/irn-fabric-load/irn-fabric-roce-100ms/flows
