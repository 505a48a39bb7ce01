#!/bin/sh
# netrt-multipath-fabric at 2 ms of arrivals, sprayed GBN + NetRT, seeds 1-3: the resends record's
# cells again with the destination ToRs' ResyncsEarly (NAKs passed on that name a PSN before the
# first the flow's entry saw) and the drops at ports toward hosts (docs/experiments.md,
# netrt-multipath-fabric). One cell a process (cellset.sh), CPU in time.log; record
# ../netrt-multipath-fabric-2ms-spray-early.{json,md}. Run from the repository's root; TORSIM is
# torsim's path.
set -e
. docs/results/fabric/cellset.sh
cellset docs/results/fabric netrt-multipath-fabric-2ms-spray-early netrt-multipath-fabric --duration 2ms --multipath spray --schemes gbn+netrt
