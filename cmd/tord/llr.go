package main

import (
	"net/http"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"rocetor/cmd/tord/api"
	"rocetor/tor/llr"
)

// ifCounters reads a port's interface counters through netlink for the
// corruption monitor: frames received intact, and frames received with
// CRC errors (rx_crc_errors; rx_errors also counts FIFO overruns and
// missed frames, congestion rather than corruption).
func ifCounters(port string) (rx, errs uint64, ok bool) {
	l, err := netlink.LinkByName(port)
	if err != nil || l.Attrs().Statistics == nil {
		return 0, 0, false
	}
	st := l.Attrs().Statistics
	return st.RxPackets, st.RxCrcErrors, true
}

// llrHandler serves the admin API's /api/v1/llr: GET lists the protected ports;
// POST ?port=NAME&state=on|off|auto pins the port's sender on or
// off, or hands it back to the neighbour's monitor.
func llrHandler(ports []string, stage llr.Protector, mon *llr.Monitor) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
		case http.MethodPost:
			q := r.URL.Query()
			i := slices.Index(ports, q.Get("port"))
			if !stage.Protected(i) {
				fail(w, http.StatusNotFound, "port %q is not protected by llr (protected: %s)", q.Get("port"), strings.Join(protectedPorts(ports, stage), ", "))
				return
			}
			state := q.Get("state")
			switch state {
			case "on", "off":
				stage.SetActive(i, state == "on")
			case "auto":
				stage.Release(i)
			default:
				fail(w, http.StatusBadRequest, "want state=on|off|auto")
				return
			}
		default:
			fail(w, http.StatusMethodNotAllowed, "GET or POST")
			return
		}
		var mons []llr.MonitorStatus
		if mon != nil {
			mons = mon.Status()
		}
		st := stage.Snapshot()
		out := []api.LLRPort{}
		for i, name := range ports {
			if !stage.Protected(i) {
				continue
			}
			p := &st.Ports[i]
			s := api.LLRPort{Port: name, Active: stage.Active(i), Pinned: stage.Pinned(i), Mode: stage.Config().Mode.String(),
				Protected: p.Protected, Watched: p.Watched, Copies: p.Copies, Retransmitted: p.Retransmitted,
				MeasuredLoss: p.MeasuredLoss(), EffectiveLoss: p.EffectiveLoss(), NeighbourLoss: stage.NeighbourLoss(i)}
			for j := range mons {
				if mons[j].Port == name {
					s.Monitor = &mons[j]
				}
			}
			out = append(out, s)
		}
		reply(w, out)
	}
}

func protectedPorts(ports []string, stage llr.Protector) []string {
	var out []string
	for i, p := range ports {
		if stage.Protected(i) {
			out = append(out, p)
		}
	}
	return out
}
