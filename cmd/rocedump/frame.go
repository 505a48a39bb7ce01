package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"

	"rocetor/rocev2"
)

// frameInfo is what rocedump reports about one frame, in JSON as it is
// and in text by frameInfo.text. Pointer fields are absent (not zero)
// when the frame has no such field; ICRCOK is null instead.
type frameInfo struct {
	Frame     int     `json:"frame"` // 1-based index in the input
	Time      float64 `json:"time"`  // seconds since the first frame
	Len       int     `json:"len"`   // frame length on the wire
	Kind      string  `json:"kind"`  // rocev2.Kind: roce, ip, mac-control, link-ctrl, other
	Reason    string  `json:"reason,omitempty"`
	EtherType string  `json:"ethertype,omitempty"`
	L2Name    string  `json:"ethertype_name,omitempty"`
	VLAN      *uint16 `json:"vlan,omitempty"`
	PCP       *uint8  `json:"pcp,omitempty"`

	Src   string `json:"src,omitempty"`
	Dst   string `json:"dst,omitempty"`
	DSCP  *uint8 `json:"dscp,omitempty"`
	ECN   *uint8 `json:"ecn,omitempty"`
	Proto *uint8 `json:"proto,omitempty"`

	SrcPort    *uint16 `json:"sport,omitempty"`
	Opcode     *uint8  `json:"opcode,omitempty"`
	OpcodeName string  `json:"opcode_name,omitempty"`
	DQPN       *uint32 `json:"dqpn,omitempty"`
	PSN        *uint32 `json:"psn,omitempty"`
	AckReq     *bool   `json:"ack_req,omitempty"`
	Ext        string  `json:"ext,omitempty"`
	PayloadLen *int    `json:"payload_len,omitempty"`
	ICRCOK     *bool   `json:"icrc_ok"`

	VA       *uint64 `json:"va,omitempty"`
	RKey     *uint32 `json:"rkey,omitempty"`
	DMALen   *uint32 `json:"dma_len,omitempty"`
	Syndrome string  `json:"syndrome,omitempty"`
	AckMSN   *uint32 `json:"aeth_msn,omitempty"`
	Imm      *uint32 `json:"imm,omitempty"`
	QKey     *uint32 `json:"qkey,omitempty"`
	SrcQP    *uint32 `json:"src_qp,omitempty"`
	SwapAdd  *uint64 `json:"swap_add,omitempty"`
	Compare  *uint64 `json:"compare,omitempty"`
	OrigData *uint64 `json:"orig_data,omitempty"`
	FETH     *uint32 `json:"feth,omitempty"`

	DCPTag string  `json:"dcp_tag,omitempty"`
	MSN    *uint32 `json:"msn,omitempty"`
	Retry  *uint8  `json:"retry,omitempty"`
	SSN    *uint32 `json:"ssn,omitempty"`

	NetRTType      string  `json:"netrt_type,omitempty"`
	EPSN           *uint32 `json:"epsn,omitempty"`
	Bitmap         string  `json:"bitmap,omitempty"` // 32 hex digits, bit 0 (PSN ePSN+1) last
	UnfulfilledPSN *uint32 `json:"unfulfilled_psn,omitempty"`

	ShimType   string  `json:"shim_type,omitempty"`
	LinkSeq    *uint16 `json:"link_seq,omitempty"`
	LinkEra    *bool   `json:"link_era,omitempty"`
	LinkAck    *uint16 `json:"link_ack,omitempty"`
	LinkAckEra *bool   `json:"link_ack_era,omitempty"`
	LossCount  *uint8  `json:"loss_count,omitempty"`

	// The INT tail after the IP datagram (rocev2/int.go, HPCC):
	// "request" or "echo", the records reserved and those filled.
	INT     string   `json:"int,omitempty"`
	INTMax  *int     `json:"int_max,omitempty"`
	INTHops []intHop `json:"int_hops,omitempty"`

	MACOpcode *uint16  `json:"mac_control_opcode,omitempty"`
	PFCEnable *uint8   `json:"pfc_enable,omitempty"`
	PFCTimes  []uint16 `json:"pfc_times,omitempty"`
	PauseTime *uint16  `json:"pause_time,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// intHop is one INT record.
type intHop struct {
	TS       uint32 `json:"ts_ns"`
	QLen     uint32 `json:"qlen"`
	TxBytes  uint32 `json:"tx_bytes"`
	RateMbps uint32 `json:"rate_mbps"`
}

// describeINT reads the INT tail after the datagram that ends at end,
// if the frame carries one ("malformed" when it starts like one but is
// not).
func describeINT(fi *frameInfo, b []byte, end int) {
	t, bad := rocev2.FindINT(b, end)
	switch {
	case bad:
		fi.INT = "malformed"
		return
	case t == nil:
		return
	case t.Echo():
		fi.INT = "echo"
	default:
		fi.INT = "request"
	}
	fi.INTMax = ptr(t.Max())
	fi.INTHops = []intHop{}
	for i := range t.Hops() {
		h := t.Hop(i)
		fi.INTHops = append(fi.INTHops, intHop{h.TS, h.QLen, h.TxBytes, h.RateMbps})
	}
}

var etherTypeNames = map[uint16]string{
	rocev2.EtherTypeIPv4: "ipv4", rocev2.EtherTypeIPv6: "ipv6", rocev2.EtherTypeARP: "arp",
	rocev2.EtherTypeLLDP: "lldp", rocev2.EtherTypeMACControl: "mac-control",
	rocev2.EtherTypeShim: "shim", rocev2.EtherTypeVLAN: "vlan",
}

// describe reads what the classifier found in frame b. It indexes b only
// where m says the classifier checked the bytes: a header's fields when
// its offset is set, the transport headers only when the packet passed
// every length check (Reason none or bad_icrc).
func describe(b []byte, m *rocev2.Meta) *frameInfo {
	fi := &frameInfo{Kind: m.Kind.String()}
	if m.Reason != rocev2.ReasonNone {
		fi.Reason = m.Reason.String()
	}
	if len(b) < rocev2.EthernetLen {
		return fi
	}
	et := m.EtherType
	if et == 0 {
		et = rocev2.Ethernet(b).Type()
		if m.VLAN {
			et = rocev2.Ethernet(b).InnerType()
		}
		if m.ShimOff != 0 {
			et = rocev2.EtherTypeShim
		}
	}
	fi.EtherType, fi.L2Name = fmt.Sprintf("0x%04x", et), etherTypeNames[et]
	if m.VLAN {
		fi.VLAN, fi.PCP = ptr(m.VID), ptr(m.PCP)
	}
	if m.ShimOff != 0 {
		describeShim(fi, rocev2.Shim(b[m.ShimOff:]))
	}
	if m.IPVersion != 0 {
		// The IP header passed its checks, and the flow key holds its
		// addresses.
		fi.Src = netip.AddrFrom16(m.Flow.Src).Unmap().String()
		fi.Dst = netip.AddrFrom16(m.Flow.Dst).Unmap().String()
		fi.DSCP, fi.ECN = ptr(m.DSCP), ptr(m.ECN)
		if m.IPVersion == 4 {
			fi.Proto = ptr(rocev2.IPv4(b[m.L3Off:]).Protocol())
		} else {
			fi.Proto = ptr(rocev2.IPv6(b[m.L3Off:]).NextHeader())
		}
	}
	switch m.Kind {
	case rocev2.KindRoCE:
		describeRoCE(fi, b, m)
	case rocev2.KindMACControl:
		if m.Reason == rocev2.ReasonNone {
			describeMACControl(fi, rocev2.MACControl(b[m.L3Off:]))
		}
	}
	return fi
}

func describeShim(fi *frameInfo, s rocev2.Shim) {
	fi.ShimType = rocev2.ShimTypeName(s.Type())
	fi.LinkSeq, fi.LinkEra = ptr(s.Seq().Seq()), ptr(s.Seq().Era())
	if s.HasAck() {
		fi.LinkAck, fi.LinkAckEra = ptr(s.Ack().Seq()), ptr(s.Ack().Era())
	}
	if s.Type() == rocev2.ShimLoss {
		fi.LossCount = ptr(s.Count())
	}
}

func describeMACControl(fi *frameInfo, c rocev2.MACControl) {
	switch c.Opcode() {
	case rocev2.MACControlPFC:
		fi.PFCEnable = ptr(c.ClassEnable())
		for p := 0; p < 8; p++ {
			fi.PFCTimes = append(fi.PFCTimes, c.Time(p))
		}
	case rocev2.MACControlPause:
		fi.PauseTime = ptr(c.PauseTime())
	default:
		fi.MACOpcode = ptr(c.Opcode())
	}
}

func describeRoCE(fi *frameInfo, b []byte, m *rocev2.Meta) {
	if m.L4Off != 0 {
		fi.SrcPort = ptr(m.SrcPort)
	}
	if m.BTHOff == 0 {
		return
	}
	fi.Opcode, fi.OpcodeName = ptr(uint8(m.Opcode)), m.Opcode.String()
	fi.DQPN, fi.PSN, fi.AckReq = ptr(m.Flow.QP), ptr(uint32(m.PSN)), ptr(m.AckReq)
	if m.End != 0 && (m.Reason == rocev2.ReasonNone || m.Reason == rocev2.ReasonBadICRC) {
		describeINT(fi, b, int(m.End))
	}
	switch m.Reason {
	case rocev2.ReasonNone:
		fi.ICRCOK = ptr(true)
	case rocev2.ReasonBadICRC:
		fi.ICRCOK = ptr(false)
	default:
		return // the headers after the BTH were not all there
	}
	fi.Ext, fi.PayloadLen = m.Ext.String(), ptr(m.PayloadLen())
	at := func(x rocev2.Ext) []byte { return b[m.ExtOff(x):] }
	if m.Ext&rocev2.ExtDCP != 0 {
		d := rocev2.DCPETH(at(rocev2.ExtDCP))
		fi.DCPTag, fi.MSN, fi.Retry, fi.SSN = m.Tag.String(), ptr(d.MSN()), ptr(d.RetryNo()), ptr(d.SSN())
	}
	if m.Ext&rocev2.ExtDETH != 0 {
		d := rocev2.DETH(at(rocev2.ExtDETH))
		fi.QKey, fi.SrcQP = ptr(d.QKey()), ptr(d.SrcQP())
	}
	if m.Ext&rocev2.ExtRETH != 0 {
		r := rocev2.RETH(at(rocev2.ExtRETH))
		fi.VA, fi.RKey, fi.DMALen = ptr(r.VA()), ptr(r.RKey()), ptr(r.DMALen())
	}
	if m.Ext&rocev2.ExtAtomicETH != 0 {
		a := rocev2.AtomicETH(at(rocev2.ExtAtomicETH))
		fi.VA, fi.RKey, fi.SwapAdd, fi.Compare = ptr(a.VA()), ptr(a.RKey()), ptr(a.SwapAdd()), ptr(a.Compare())
	}
	if m.Ext&rocev2.ExtAETH != 0 {
		a := rocev2.AETH(at(rocev2.ExtAETH))
		fi.Syndrome, fi.AckMSN = a.Syndrome().String(), ptr(a.MSN())
	}
	if m.Ext&rocev2.ExtAtomicAck != 0 {
		fi.OrigData = ptr(rocev2.AtomicAck(at(rocev2.ExtAtomicAck)).OrigData())
	}
	if m.Ext&rocev2.ExtImmDt != 0 {
		fi.Imm = ptr(rocev2.ImmDt(at(rocev2.ExtImmDt)).Value())
	}
	if m.Ext&rocev2.ExtIETH != 0 {
		fi.RKey = ptr(rocev2.IETH(at(rocev2.ExtIETH)).RKey())
	}
	if m.Ext&rocev2.ExtFETH != 0 {
		fi.FETH = ptr(rocev2.FETH(at(rocev2.ExtFETH)).Selectivity())
	}
	if m.Ext&rocev2.ExtNetRT != 0 {
		n := rocev2.NetRT(at(rocev2.ExtNetRT))
		if n.Type() == rocev2.NetRTRequest {
			bm := n.Bitmap()
			fi.NetRTType, fi.EPSN, fi.Bitmap = "request", ptr(uint32(n.PSN())), fmt.Sprintf("%016x%016x", bm.Hi, bm.Lo)
		} else {
			fi.NetRTType, fi.UnfulfilledPSN = "unfulfilled", ptr(uint32(n.PSN()))
		}
	}
}

// dumper numbers frames, classifies them and prints them.
type dumper struct {
	w    *bufio.Writer
	json bool
	c    rocev2.Classifier
	n    int
	t0   time.Time
}

func (d *dumper) frame(b []byte, ci gopacket.CaptureInfo) {
	d.n++
	if d.n == 1 {
		d.t0 = ci.Timestamp
	}
	var m rocev2.Meta
	d.c.Classify(b, &m)
	fi := describe(b, &m)
	fi.Frame, fi.Time, fi.Len = d.n, ci.Timestamp.Sub(d.t0).Seconds(), ci.Length
	if fi.Len == 0 {
		fi.Len = len(b)
	}
	if d.json {
		j, _ := json.Marshal(fi) // plain values: cannot fail
		d.w.Write(j)
		d.w.WriteByte('\n')
		return
	}
	d.w.WriteString(fi.text())
	d.w.WriteByte('\n')
}
