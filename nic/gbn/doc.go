// Package gbn is the commodity RoCE transport: Go-Back-N loss recovery
// as ConnectX NICs (CX-5, the RNIC-GBN of seed 002) and Linux Soft-RoCE
// implement it. It is the baseline the selective-repeat transports (irn,
// fasr, dcp) are measured against. The state machines follow rxe's
// (drivers/infiniband/sw/rxe): rxe_resp.c for the responder, rxe_req.c
// and rxe_comp.c for the requester.
//
// # Responder (rxe_resp.c check_psn, duplicate_request)
//
// Only the expected PSN is accepted. The first packet after a gap is
// dropped and answered with exactly one NAK, AETH syndrome NAK code 0
// (PSN sequence error), carrying the expected PSN; the responder then
// drops every out-of-order packet silently (rxe's sent_psn_nak) until
// the expected PSN arrives. A packet before the expected PSN is a
// duplicate: it is dropped and acknowledged again (coalesced with the
// batch's other ACKs), and a duplicate READ request restarts that read's
// responses from its PSN. An accepted packet is placed (nic.Ctx.Deliver)
// and acknowledged when it asks (AckReq, which the requester sets on the
// last packet of each message) or after Config.AckEvery accepted
// packets, with one ACK per QP per received batch carrying the MSN. A
// bad opcode sequence or length is NAKed as an invalid request, a bad
// rkey, range or permission as a remote access error; both put the QP in
// the error state, as in rxe. A SEND with no receive posted is answered
// with an RNR NAK.
//
// Drops: nic_out_of_order (after a gap, one NAK per gap), nic_duplicate,
// nic_invalid_request, nic_access_error, nic_rnr, and nic_stale for
// responses that fit nothing outstanding.
//
// # Requester (rxe_req.c, rxe_comp.c)
//
// The requester sends PSNs in order, at most Config.Window beyond the
// oldest unacknowledged one (rxe's RXE_MAX_UNACKED_PSNS, 128). It keeps
// no copies: any unacknowledged PSN is rebuilt from its work request and
// memory region. An ACK completes, in order, the work it covers. A NAK
// for PSN n acknowledges everything before n and rewinds the send
// pointer to n: everything from the loss on is sent again (req_retry).
// A lost READ response shows as a gap in the response PSNs: the
// requester re-issues the READ from the lost PSN, with the VA advanced
// and the length reduced as req_retry does, and goes back on what
// followed; later responses of the same gap are dropped until the
// missing one arrives. (rxe waits for its retransmission timer here;
// re-issuing on the gap is the Go-Back-N reading of the same rule and
// saves an RTO per lost response. An ACK that overtakes outstanding read
// responses is remembered rather than taken as rxe's implicit NAK:
// responses travel on the data queue, ACKs on the control queue, and may
// pass each other in the endpoint's own egress.)
//
// A retransmission timer runs while anything is outstanding, restarted
// on progress. On expiry the requester goes back to the oldest
// unacknowledged PSN and doubles the timeout (Config.RTO up to
// Config.MaxRTO); after Config.RetryLimit expiries without progress the
// oldest work request completes with nic.StatusRetryExceeded and the QP
// enters the error state, flushing the rest — an error the poster sees,
// never a hang. The timer is what recovers a lost last packet (no later
// packet reveals the gap), a lost NAK, a lost re-issued READ, and the
// loss of every ACK of a full window. RNR NAKs are not retried: with an
// RNR retry count of 0 they fail the SEND with nic.StatusRNR.
//
// # Why Go-Back-N collapses under loss
//
// Go-Back-N resends everything in flight after a loss: one drop costs a
// round trip of redundant packets, which in turn add load where the loss
// happened. IRN's evaluation (seed 004 §4.2.3 and §4.3; the seed's text
// starts in §3, and the paper's §2 motivation is not in it) attributes
// RoCE's dependence on PFC to exactly this: without PFC its slowdown and
// FCTs are 1.5–3× worse "because of the go-back-N loss recovery …, which
// penalizes performance due to (i) increased congestion caused by
// redundant retransmissions and (ii) the time and bandwidth wasted by
// flows in sending these redundant packets"; IRN itself with Go-Back-N
// instead of selective repeat "results in significantly worse
// performance" (§4.3, Figure 7). FaSR (seed 001 §II) measures a CX6-DX
// falling below 10% of its throughput at 1% loss; DCP (seed 002 §2.1)
// calls the same baseline RNIC-GBN. Even reordering
// costs: two swapped packets are two NAKs and a resend (TestReorder).
// TestRandomLoss shows the multiplier here: at 1% loss the requester
// resends tens of packets for each one lost.
//
// # Per-QP state
//
// 12 bytes: the send pointer, the responder's packets since its last
// ACK, the retry count and backoff, and the NAK-sent and read-gap flags.
// No SR state (nic.SRState): gbn is the baseline the selective
// transports' SR state is counted over.
//
// # Configuration
//
//	t, err := gbn.New(gbn.Config{
//		Window:     128,     // PSNs in flight
//		AckEvery:   16,      // responder ACK coalescing
//		RTO:        1e6,     // 1 ms, doubled per expiry
//		MaxRTO:     64e6,
//		RetryLimit: 7,
//	})
package gbn
