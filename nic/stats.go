package nic

import "rocetor/dataplane"

// Stats are the counters of one endpoint. The worker's goroutine updates
// them as plain fields; Endpoint.Stats returns the copy published about
// once a millisecond (like dataplane.Worker.Snapshot), safe to read from
// any goroutine.
type Stats struct {
	TxPackets, TxBytes uint64 // RoCE frames built: requests, read responses, ACKs/NAKs
	RxPackets, RxBytes uint64 // RoCE frames addressed to an open QP

	Requests    uint64 // request packets sent (WRITE, SEND, READ request), retransmissions included
	Responses   uint64 // read response packets sent, resent ones included
	Retransmits uint64 // request packets sent again (PSN below the highest sent) and read responses resent
	ReadRetries uint64 // READ requests re-issued from a lost response's PSN (counted in Retransmits too)
	Timeouts    uint64 // retransmission timer expiries handed to the transport
	// TimeoutRetransmits are, of Retransmits, those a QP sent after its
	// timer last expired and before a NAK came after it: the resends
	// timeouts made, Retransmits less these the ones NAKs (and, for
	// the selective transports, SACKs) made.
	TimeoutRetransmits uint64

	AcksSent, AcksRecv uint64 // positive ACKs (AETH syndrome ACK)
	NAKsSent, NAKsRecv uint64 // NAKs of any code; the PSN sequence error ones are also below
	SeqNAKsSent        uint64 // NAK code 0 (PSN sequence error) sent
	SeqNAKsRecv        uint64 // NAK code 0 received
	RNRNAKsSent        uint64 // RNR NAKs sent (SEND with no receive posted)

	Duplicates     uint64 // packets dropped as duplicates (PSN before the expected one)
	OutOfOrder     uint64 // packets dropped as out of order (PSN after the expected one)
	Stale          uint64 // responses for nothing outstanding, or malformed for their PSN
	AccessErrors   uint64 // requests refused for a bad rkey, range or permission (NAK remote access)
	InvalidReqs    uint64 // requests refused for a bad opcode sequence or length (NAK invalid request)
	UnknownQP      uint64 // frames for a QP that is not open
	QPErrorDrops   uint64 // frames for a QP in the error state
	CompletionsOK  uint64 // work completions with StatusOK (sends, writes, reads, receives)
	CompletionsErr uint64 // work completions with an error status, flushes included
	CompletedBytes uint64 // message bytes of the StatusOK completions
	DeliveredBytes uint64 // payload bytes the responder placed (WRITE, SEND) or the requester placed (READ)
	Paced          uint64 // times a QP had to wait for its congestion control

	// DCQCN's signals (nic/cc.DCQCN; a CC that never asks for a CNP
	// leaves CNPsSent at 0).
	ECNMarked uint64 // RoCE frames received with ECN CE (11) for an open QP, CNPs included
	CNPsSent  uint64 // CNPs queued: marks the CC's notification point answered (Marked)
	CNPsRecv  uint64 // CNPs received and handed to the CC's reaction point

	// INTNoRoom: INT tails (a request's or an echo) left out because
	// the frame buffer had no room after the packet (nic/int.go).
	INTNoRoom uint64

	// The QP-context cache (Config.QPCache; all 0 without it): lookups
	// that found the context on chip, those that fetched it, and the
	// time the fetches held the pipeline.
	QPCHits, QPCMisses uint64
	QPCStallNs         uint64
}

// Drop reasons of the endpoint stage, counted by the worker (its
// Snapshot.Drops) under these labels.
var (
	// ReasonNotRoCE: the frame is not a RoCEv2 packet (an endpoint port
	// carries nothing else; the host's XDP program passes ARP to the kernel).
	ReasonNotRoCE = dataplane.NewReason("nic_not_roce")
	// ReasonUnknownQP: no open QP has the destination QPN.
	ReasonUnknownQP = dataplane.NewReason("nic_unknown_qp")
	// ReasonBadOpcode: not an RC opcode (UC, UD, vendor) or not one a
	// requester or responder receives.
	ReasonBadOpcode = dataplane.NewReason("nic_bad_opcode")
	// ReasonQPError: the QP is in the error state.
	ReasonQPError = dataplane.NewReason("nic_qp_error")
	// ReasonOutOfOrder: a PSN after the expected one (Go-Back-N drops it).
	ReasonOutOfOrder = dataplane.NewReason("nic_out_of_order")
	// ReasonDuplicate: a PSN before the expected one.
	ReasonDuplicate = dataplane.NewReason("nic_duplicate")
	// ReasonStale: an ACK, NAK or read response for nothing outstanding,
	// or one that does not fit the request it answers.
	ReasonStale = dataplane.NewReason("nic_stale")
	// ReasonInvalid: a request with a bad opcode sequence or length.
	ReasonInvalid = dataplane.NewReason("nic_invalid_request")
	// ReasonAccess: a request outside its memory region or without permission.
	ReasonAccess = dataplane.NewReason("nic_access_error")
	// ReasonRNR: a SEND found no posted receive.
	ReasonRNR = dataplane.NewReason("nic_rnr")
	// ReasonBuild: a frame could not be built (MTU larger than the frame).
	ReasonBuild = dataplane.NewReason("nic_build")
)
