package rocev2

// SETH is a view of the 8-byte SEND placement header of the OOO layout,
// which follows the standard headers of every SEND packet (first,
// middle, last, only; after an ImmDt or IETH) when the classifier runs
// with Classifier.OOO. It says where a SEND packet that arrives out of
// order belongs, as seed 001 §IV-D has every SEND packet of IRN, SRNIC and
// FaSR carry "the send message sequence number … and … the payload
// offset":
//
//	bytes 0-2  SSN    send sequence number: the SEND's position among
//	                  the QP's SENDs (0, 1, 2, …), hence which receive
//	                  it takes
//	bytes 3-5  index  the packet's index in its message: its payload
//	                  goes at index × path MTU in the receive buffer
//	bytes 6-7  reserved, 0
type SETH []byte

// SSN returns the send sequence number.
func (s SETH) SSN() uint32 { return get24(s[0:3]) }

// Index returns the packet's index in its message.
func (s SETH) Index() uint32 { return get24(s[3:6]) }

// Set sets both fields and clears the reserved bytes.
func (s SETH) Set(ssn, index uint32) {
	put24(s[0:3], ssn)
	put24(s[3:6], index)
	s[6], s[7] = 0, 0
}
