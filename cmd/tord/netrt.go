package main

import (
	"net/netip"
	"slices"

	"rocetor/cmd/tord/api"
	"rocetor/tor/netrt"
)

var stateNames = [...]string{netrt.Ordered: "ordered", netrt.ReTx: "retx", netrt.Waiting: "waiting"}

// busiestFlows lists every worker's busiest flows (tor/netrt
// DstToR.Busiest), most held bytes first.
func busiestFlows(ports []string, dsts []*netrt.DstToR) []api.Flow {
	out := []api.Flow{}
	for w, d := range dsts {
		for _, f := range d.Busiest() {
			v := api.Flow{Worker: w, Src: netip.AddrFrom16(f.Key.Src).Unmap().String(),
				Dst: netip.AddrFrom16(f.Key.Dst).Unmap().String(), QP: f.Key.QP, State: "unknown",
				EPSN: uint32(f.EPSN), Held: f.Held, HeldBytes: f.HeldBytes, Requests: f.Requests}
			if int(f.State) < len(stateNames) {
				v.State = stateNames[f.State]
			}
			if int(f.Port) < len(ports) {
				v.Port = ports[f.Port]
			}
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b api.Flow) int { return b.HeldBytes - a.HeldBytes })
	return out
}
