package main

import (
	"fmt"
	"net/url"
	"strconv"

	"rocetor/cmd/tord/api"
)

func llrCmd(c *client, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: llr needs status, on, off or auto", errUsage)
	}
	var ports []api.LLRPort
	switch verb := args[0]; verb {
	case "status":
		if len(args) > 2 {
			return fmt.Errorf("%w: llr status [PORT]", errUsage)
		}
		if err := c.do("GET", "/api/v1/llr", nil, &ports); err != nil {
			return err
		}
		if len(args) == 2 {
			var one []api.LLRPort
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
