package main

import (
	"fmt"
	"net/netip"
	"strings"
)

// text renders a frame as one tcpdump-like line: number, relative time,
// addresses, then key=value fields.
func (fi *frameInfo) text() string {
	var s strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&s, format, a...) }
	f("%d %.6f", fi.Frame, fi.Time)
	if fi.VLAN != nil {
		f(" vlan=%d pcp=%d", *fi.VLAN, *fi.PCP)
	}
	switch fi.Kind {
	case "roce":
		src := fi.Src
		if fi.SrcPort != nil {
			src = netip.AddrPortFrom(netip.MustParseAddr(fi.Src), *fi.SrcPort).String()
		}
		f(" %s > %s", src, fi.Dst)
		if fi.Opcode != nil {
			f(" %s qp=0x%06x psn=%d", fi.OpcodeName, *fi.DQPN, *fi.PSN)
		}
		if fi.PayloadLen != nil {
			f(" len=%d", *fi.PayloadLen)
		}
		switch {
		case fi.ICRCOK == nil:
		case *fi.ICRCOK:
			f(" icrc=ok")
		default:
			f(" icrc=bad")
		}
		fi.textExt(f)
	case "ip":
		if fi.Src != "" {
			f(" %s > %s ip proto=%d", fi.Src, fi.Dst, *fi.Proto)
		} else {
			f(" ip")
		}
		f(" length=%d", fi.Len)
	case "mac-control":
		switch {
		case fi.PFCEnable != nil:
			f(" pfc enable=0x%02x times=%v", *fi.PFCEnable, fi.PFCTimes)
		case fi.PauseTime != nil:
			f(" pause time=%d", *fi.PauseTime)
		case fi.MACOpcode != nil:
			f(" mac-control opcode=0x%04x", *fi.MACOpcode)
		default:
			f(" mac-control")
		}
	case "link-ctrl":
		f(" link-ctrl")
	default:
		f(" %s ethertype=%s", fi.Kind, fi.EtherType)
		if fi.L2Name != "" {
			f("(%s)", fi.L2Name)
		}
		f(" length=%d", fi.Len)
	}
	if fi.ShimType != "" {
		f(" shim=%s seq=%d era=%d", fi.ShimType, *fi.LinkSeq, b2i(*fi.LinkEra))
		if fi.LinkAck != nil {
			f(" ack=%d ack_era=%d", *fi.LinkAck, b2i(*fi.LinkAckEra))
		}
		if fi.LossCount != nil {
			f(" count=%d", *fi.LossCount)
		}
	}
	if fi.Reason != "" && fi.Reason != "bad_icrc" {
		f(" malformed=%s", fi.Reason)
	}
	return s.String()
}

// textExt adds the extension header fields of a RoCEv2 packet.
func (fi *frameInfo) textExt(f func(string, ...any)) {
	if fi.INT != "" {
		f(" int=%s", fi.INT)
		if fi.INTMax != nil {
			f("/%d", *fi.INTMax)
		}
		for _, h := range fi.INTHops {
			f(" [ts=%d q=%d tx=%d rate=%dM]", h.TS, h.QLen, h.TxBytes, h.RateMbps)
		}
	}
	if fi.DCPTag != "" {
		f(" dcp=%s msn=%d retry=%d ssn=%d", fi.DCPTag, *fi.MSN, *fi.Retry, *fi.SSN)
	}
	if fi.QKey != nil {
		f(" qkey=0x%08x srcqp=0x%06x", *fi.QKey, *fi.SrcQP)
	}
	if fi.VA != nil {
		f(" va=0x%x rkey=0x%x", *fi.VA, *fi.RKey)
	} else if fi.RKey != nil {
		f(" inv_rkey=0x%x", *fi.RKey)
	}
	if fi.DMALen != nil {
		f(" dlen=%d", *fi.DMALen)
	}
	if fi.SwapAdd != nil {
		f(" swap_add=0x%x compare=0x%x", *fi.SwapAdd, *fi.Compare)
	}
	if fi.Syndrome != "" {
		f(" aeth=%s aeth_msn=%d", fi.Syndrome, *fi.AckMSN)
	}
	if fi.OrigData != nil {
		f(" orig=0x%x", *fi.OrigData)
	}
	if fi.Imm != nil {
		f(" imm=0x%08x", *fi.Imm)
	}
	if fi.FETH != nil {
		f(" feth=0x%08x", *fi.FETH)
	}
	switch fi.NetRTType {
	case "request":
		f(" netrt=request epsn=%d bitmap=%s", *fi.EPSN, fi.Bitmap)
	case "unfulfilled":
		f(" netrt=unfulfilled psn=%d", *fi.UnfulfilledPSN)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
