package rocev2_test

import (
	"fmt"
	"testing"

	"rocetor/rocev2"
)

// TestOpcodeTable compares the package's opcode table with the one the
// tests carry, opcode by opcode, over all 256 values.
func TestOpcodeTable(t *testing.T) {
	for v := 0; v < 256; v++ {
		op := rocev2.Opcode(v)
		o, listed := fxOpOf(op)
		if op.Known() != listed {
			t.Errorf("%#02x: Known = %v, want %v", v, op.Known(), listed)
		}
		if !listed {
			if want := fmt.Sprintf("OPCODE_0x%02x", v); op.String() != want {
				t.Errorf("%#02x: String = %q, want %q", v, op.String(), want)
			}
			if op.Ext() != 0 || op.HasPayload() || op.IsFirst() || op.IsOnly() || op.IsRequest() {
				t.Errorf("%#02x: unknown opcode has properties", v)
			}
			continue
		}
		var want rocev2.Ext
		for _, x := range o.ext {
			want |= x
		}
		if op.String() != o.name || op.Ext() != want || op.HasPayload() != o.payload {
			t.Errorf("%#02x: %q ext %v payload %v; want %q %v %v",
				v, op.String(), op.Ext(), op.HasPayload(), o.name, want, o.payload)
		}
		if op.IsWrite() != fxIsWrite(op) {
			t.Errorf("%v: IsWrite = %v", op, op.IsWrite())
		}
		if op.Transport() != uint8(v)&0xe0 {
			t.Errorf("%v: Transport = %#x", op, op.Transport())
		}
	}
}

// TestOpcodePlacement checks first/middle/last/only and the other flags
// against the opcode names.
func TestOpcodePlacement(t *testing.T) {
	has := func(name, part string) bool {
		for i := 0; i+len(part) <= len(name); i++ {
			if name[i:i+len(part)] == part {
				return true
			}
		}
		return false
	}
	for _, o := range fxOps {
		op := o.op
		n := 0
		for _, b := range []bool{op.IsFirst(), op.IsMiddle(), op.IsLast(), op.IsOnly()} {
			if b {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%v: %d of first/middle/last/only", op, n)
		}
		if op.IsFirst() != has(o.name, "_FIRST") || op.IsMiddle() != has(o.name, "_MIDDLE") || op.IsLast() != has(o.name, "_LAST") {
			t.Errorf("%v: first/middle/last = %v/%v/%v", op, op.IsFirst(), op.IsMiddle(), op.IsLast())
		}
		if op.IsSend() != has(o.name, "SEND") || op.HasImmediate() != has(o.name, "IMMEDIATE") {
			t.Errorf("%v: IsSend %v HasImmediate %v", op, op.IsSend(), op.HasImmediate())
		}
		resp := has(o.name, "RESPONSE") || has(o.name, "ACKNOWLEDGE")
		if op.IsResponse() != resp {
			t.Errorf("%v: IsResponse = %v, want %v", op, op.IsResponse(), resp)
		}
		req := !resp && op != rocev2.CNP && op != rocev2.NetRTOpcode
		if op.IsRequest() != req {
			t.Errorf("%v: IsRequest = %v, want %v", op, op.IsRequest(), req)
		}
	}
}

func TestDCPExt(t *testing.T) {
	for _, o := range fxOps {
		for tag := rocev2.DCPTag(0); tag < 4; tag++ {
			var want rocev2.Ext
			for _, x := range fxWireExt(o, true, false, false, tag) {
				want |= x
			}
			if got := o.op.DCPExt(tag); got != want {
				t.Errorf("%v.DCPExt(%v) = %v, want %v", o.op, tag, got, want)
			}
		}
	}
}

func TestOOOExt(t *testing.T) {
	for _, o := range fxOps {
		var std, want rocev2.Ext
		for _, x := range fxWireExt(o, false, false, false, 0) {
			std |= x
		}
		for _, x := range fxWireExt(o, false, false, true, 0) {
			want |= x
		}
		if got := o.op.OOOExt(std); got != want {
			t.Errorf("%v.OOOExt(%v) = %v, want %v", o.op, std, got, want)
		}
	}
}

func TestSACKExt(t *testing.T) {
	for _, o := range fxOps {
		for tag := rocev2.DCPTag(0); tag < 4; tag++ {
			var base, want rocev2.Ext
			for _, x := range fxWireExt(o, true, false, false, tag) {
				base |= x
			}
			for _, x := range fxWireExt(o, true, true, false, tag) {
				want |= x
			}
			if got := o.op.SACKExt(base); got != want {
				t.Errorf("%v.SACKExt(%v) = %v, want %v", o.op, base, got, want)
			}
		}
	}
}

func TestExtStringLen(t *testing.T) {
	cases := []struct {
		e    rocev2.Ext
		s    string
		n    int
		offs map[rocev2.Ext]int
	}{
		{0, "", 0, nil},
		{rocev2.ExtRETH | rocev2.ExtImmDt, "RETH+ImmDt", 20, nil},
		{rocev2.ExtRETH | rocev2.ExtFETH, "FETH+RETH", 20, nil},
		{rocev2.ExtDCP | rocev2.ExtRETH | rocev2.ExtImmDt, "DCPETH+RETH+ImmDt", 28, nil},
		{rocev2.ExtAETH | rocev2.ExtAtomicAck, "AETH+AtomicAckETH", 12, nil},
		{rocev2.ExtDETH | rocev2.ExtImmDt, "DETH+ImmDt", 12, nil},
		{rocev2.ExtAtomicETH, "AtomicETH", 28, nil},
		{rocev2.ExtIETH, "IETH", 4, nil},
		{rocev2.ExtDCP | rocev2.ExtNetRT, "DCPETH+NetRT", 8, nil},
		{rocev2.ExtAETH | rocev2.ExtSACK, "AETH+SACKETH", 12, nil},
		{rocev2.ExtImmDt | rocev2.ExtSETH, "ImmDt+SETH", 12, nil},
		{rocev2.ExtDCP | rocev2.ExtAETH | rocev2.ExtSACK, "DCPETH+AETH+SACKETH", 20, nil},
	}
	for _, c := range cases {
		if c.e.String() != c.s || c.e.Len() != c.n {
			t.Errorf("%#x: String %q Len %d, want %q %d", uint16(c.e), c.e.String(), c.e.Len(), c.s, c.n)
		}
	}
	// Meta.ExtOff follows the wire order: a FLUSH's RETH follows its FETH.
	m := rocev2.Meta{BTHOff: 42, Ext: rocev2.ExtFETH | rocev2.ExtRETH}
	if m.ExtOff(rocev2.ExtFETH) != 54 || m.ExtOff(rocev2.ExtRETH) != 58 || m.ExtOff(rocev2.ExtAETH) != 0 {
		t.Errorf("FLUSH ExtOff: FETH %d RETH %d AETH %d, want 54 58 0",
			m.ExtOff(rocev2.ExtFETH), m.ExtOff(rocev2.ExtRETH), m.ExtOff(rocev2.ExtAETH))
	}
}

// TestSyndrome covers all 256 syndrome bytes: type, value, the predicates
// and the name, and the constructors.
func TestSyndrome(t *testing.T) {
	nakNames := []string{"PSN_SEQ_ERROR", "INVALID_REQUEST", "REMOTE_ACCESS_ERROR", "REMOTE_OPERATIONAL_ERROR", "INVALID_RD_REQUEST"}
	for v := 0; v < 256; v++ {
		s := rocev2.Syndrome(v)
		val := uint8(v & 0x1f)
		var typ uint8
		var name string
		switch v >> 5 {
		case 0:
			typ, name = rocev2.SyndromeACK, fmt.Sprintf("ACK(credits=%d)", val)
		case 1:
			typ, name = rocev2.SyndromeRNRNak, fmt.Sprintf("RNR_NAK(timer=%d)", val)
		case 3:
			typ, name = rocev2.SyndromeNAK, fmt.Sprintf("NAK(%d)", val)
			if int(val) < len(nakNames) {
				name = "NAK(" + nakNames[val] + ")"
			}
		default: // 010 and every value with the reserved bit 7 set
			typ, name = uint8(v&0xe0), fmt.Sprintf("RESERVED(%d)", v)
		}
		if s.Type() != typ || s.Value() != val || s.String() != name {
			t.Errorf("%#02x: Type %#x Value %d String %q; want %#x %d %q", v, s.Type(), s.Value(), s.String(), typ, val, name)
		}
		if s.IsACK() != (typ == rocev2.SyndromeACK) || s.IsNAK() != (typ == rocev2.SyndromeNAK) || s.IsRNR() != (typ == rocev2.SyndromeRNRNak) {
			t.Errorf("%#02x: IsACK %v IsNAK %v IsRNR %v", v, s.IsACK(), s.IsNAK(), s.IsRNR())
		}
	}
	for c := 0; c < 32; c++ {
		if s := rocev2.ACKSyndrome(uint8(c)); !s.IsACK() || int(s.Value()) != c {
			t.Errorf("ACKSyndrome(%d) = %v", c, s)
		}
		if s := rocev2.RNRSyndrome(uint8(c)); !s.IsRNR() || int(s.Value()) != c {
			t.Errorf("RNRSyndrome(%d) = %v", c, s)
		}
		if s := rocev2.NAKSyndrome(uint8(c)); !s.IsNAK() || int(s.Value()) != c {
			t.Errorf("NAKSyndrome(%d) = %v", c, s)
		}
	}
	// Out-of-range arguments stay within the five value bits.
	if s := rocev2.ACKSyndrome(0xff); s != 0x1f {
		t.Errorf("ACKSyndrome(0xff) = %#x, want 0x1f", uint8(s))
	}
	if s := rocev2.NAKSyndrome(0xff); s != 0x7f {
		t.Errorf("NAKSyndrome(0xff) = %#x, want 0x7f", uint8(s))
	}
	named := map[rocev2.Syndrome]string{
		rocev2.ACKSyndrome(31):                      "ACK(credits=31)",
		rocev2.RNRSyndrome(14):                      "RNR_NAK(timer=14)",
		rocev2.NAKSyndrome(rocev2.NakPSNSeqError):   "NAK(PSN_SEQ_ERROR)",
		rocev2.NAKSyndrome(rocev2.NakInvalidReq):    "NAK(INVALID_REQUEST)",
		rocev2.NAKSyndrome(rocev2.NakRemoteAccess):  "NAK(REMOTE_ACCESS_ERROR)",
		rocev2.NAKSyndrome(rocev2.NakRemoteOpError): "NAK(REMOTE_OPERATIONAL_ERROR)",
		rocev2.NAKSyndrome(rocev2.NakInvalidRDReq):  "NAK(INVALID_RD_REQUEST)",
		0x40: "RESERVED(64)",
	}
	for s, want := range named {
		if s.String() != want {
			t.Errorf("%#02x.String() = %q, want %q", uint8(s), s.String(), want)
		}
	}
}

// TestAETHOnTheWire builds an ACK with every syndrome and reads it back.
func TestAETHOnTheWire(t *testing.T) {
	buf := make([]byte, 128)
	for v := 0; v < 256; v++ {
		s := fxSpec(rocev2.RCAck, v%2 == 1, false, 0)
		s.Syndrome, s.AckMSN = rocev2.Syndrome(v), uint32(v)<<12|0xabc
		n, err := rocev2.Build(buf, s)
		if err != nil {
			t.Fatal(err)
		}
		m := fxCheck(t, rocev2.Classifier{}, buf, n, s)
		a := rocev2.AETH(buf[m.ExtOff(rocev2.ExtAETH):])
		if a.Syndrome() != rocev2.Syndrome(v) || a.MSN() != uint32(v)<<12|0xabc {
			t.Errorf("syndrome %#02x: read %v MSN %#x", v, a.Syndrome(), a.MSN())
		}
	}
}
