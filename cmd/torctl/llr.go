package main

import (
	"fmt"
	"net/url"
	"strconv"
)

// llrPort is one protected port as tord's GET /llr shows it.
type llrPort struct {
	Port          string  `json:"port"`
	Active        bool    `json:"active"`
	Pinned        bool    `json:"pinned"`
	Mode          string  `json:"mode"`
	Protected     uint64  `json:"protected_packets"`
	Watched       uint64  `json:"watched_packets"`
	Copies        uint64  `json:"copies"`
	Retransmitted uint64  `json:"retransmitted"`
	MeasuredLoss  float64 `json:"measured_loss"`
	EffectiveLoss float64 `json:"effective_loss"`
	NeighbourLoss float64 `json:"neighbour_loss"`
	Monitor       *struct {
		Loss       float64 `json:"loss"`
		Corrupting bool    `json:"corrupting"`
		Requests   uint64  `json:"requests"`
	} `json:"monitor"`
}

func llrCmd(c *client, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: llr needs status, on, off or auto", errUsage)
	}
	var ports []llrPort
	switch verb := args[0]; verb {
	case "status":
		if len(args) > 2 {
			return fmt.Errorf("%w: llr status [PORT]", errUsage)
		}
		if err := c.do("GET", "/api/v1/llr", nil, &ports); err != nil {
			return err
		}
		if len(args) == 2 {
			var one []llrPort
			for _, p := range ports {
				if p.Port == args[1] {
					one = append(one, p)
				}
			}
			if len(one) == 0 && !c.json {
				return fmt.Errorf("port %q is not protected by llr", args[1])
			}
			ports = one
		}
	case "on", "off", "auto":
		if len(args) != 2 {
			return fmt.Errorf("%w: llr %s PORT", errUsage, verb)
		}
		if err := c.do("POST", "/api/v1/llr", url.Values{"port": {args[1]}, "state": {verb}}, &ports); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: llr %q: want status, on, off or auto", errUsage, verb)
	}
	if c.json {
		return nil
	}
	t := c.table()
	fmt.Fprintln(t, "PORT\tSENDER\tMODE\tPROTECTED\tWATCHED\tRETX\tCOPIES\tIN LOSS\tIN EFFECTIVE\tOUT LOSS (PEER)\tMONITOR")
	for _, p := range ports {
		sender := map[bool]string{true: "on", false: "off"}[p.Active]
		if p.Pinned {
			sender += " (pinned)"
		} else {
			sender += " (auto)"
		}
		mon := "-"
		if m := p.Monitor; m != nil {
			mon = "ok"
			if m.Corrupting {
				mon = "corrupting"
			}
			mon += fmt.Sprintf(" %s, %d requests", rate(m.Loss), m.Requests)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Port, sender, p.Mode, p.Protected, p.Watched,
			p.Retransmitted, p.Copies, rate(p.MeasuredLoss), rate(p.EffectiveLoss), rate(p.NeighbourLoss), mon)
	}
	return t.Flush()
}

// rate prints a loss rate compactly: 0, 1.2e-05, 0.003.
func rate(r float64) string { return strconv.FormatFloat(r, 'g', 3, 64) }
