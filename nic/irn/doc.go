// Package irn is IRN, the "Improved RoCE NIC" transport of seed 004
// (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM '18):
// selective-repeat loss recovery with a NACK that carries a SACK (§3.1)
// and BDP-FC, a static cap on packets in flight (§3.2), so that RDMA
// needs no lossless network. It is the selective counterpart of nic/gbn
// on the same framework; nic/dcp and nic/fasr are the other selective
// designs.
//
// The seed's text is §3.1 from its second paragraph, §3.2 and §4; what
// IRN's paper says about RDMA operations and NIC state (its §5 and §6)
// is not in it. Where the transport needs those — placing packets that
// arrive out of order — it follows seed 001 §IV-D, which describes the
// same headers for IRN, SRNIC and FaSR, and says so below.
//
// # On the wire
//
//   - Requests use the OOO layout (rocev2.Classifier.OOO,
//     docs/wire-formats.md): a RETH in every WRITE packet with that
//     packet's own address — seed 001 §IV-D: "All WRITE packets carry
//     their target remote memory address … [23]" (IRN) — and after the
//     standard headers of every SEND packet an 8-byte SETH with the
//     SEND's sequence number among the QP's SENDs (which receive it
//     takes) and the packet's index in its message (seed 001 §IV-D: "All
//     SEND packets carry the … send message sequence number (MSN) and
//     … the payload offset"). READ requests are standard.
//   - ACKs and NAKs carry a SACKETH after the AETH
//     (rocev2.Classifier.SACK). IRN's NACK is AETH NAK code 0 (PSN
//     sequence error) with the cumulative acknowledgement — the
//     expected PSN — in the BTH PSN and "the sequence number of the
//     packet that triggered the NACK" in the SACKETH (§3.1). A plain ACK
//     repeats the cumulative PSN there. The FNACK flag marks a NACK for a
//     packet the receiver discarded instead of placing: an early READ
//     request (below).
//
// The transport asks for both classifier settings (nic.Classifying);
// nic/host and nictest apply them through nic.Endpoint.Classifier, and
// the endpoint then writes a SACKETH into every ACK it builds. Switches
// need neither setting: only the endpoints read these headers.
//
// # Receiver (§3.1)
//
// A WRITE or SEND packet within the receive window is placed on arrival,
// in order or not: a WRITE at the address its RETH names
// (nic.Ctx.Place), a SEND into the receive its SSN names, at index × MTU
// (nic.Ctx.PlaceRecv). The packet's bit is set in the arrival bitmap.
// "Upon every out-of-order packet arrival, an IRN receiver sends a
// NACK" with the expected PSN and the packet's own; an in-order arrival
// moves the expected PSN over every packet that had arrived, and with it
// completes, in order, the receives of the SENDs whose last packets it
// passes (their lengths are kept from their last packets) and counts the
// messages it passes for the AETH MSN. So completions follow the
// posting order, whatever the arrival order.
//
// A cumulative ACK goes (coalesced per batch) for every packet that asks
// — the last of a message, a retransmission, the packet that fills the
// sender's window — every Config.AckEvery in-order packets (at most half
// the window), and at once when an arrival closed a gap. A packet behind
// the expected PSN is a duplicate: dropped and acknowledged again; a
// duplicate of one placed ahead (its NACK was lost and the sender resent
// it) is NACKed again with its PSN. A packet beyond the bitmap is dropped
// unacknowledged (only a peer with a larger window sends one).
//
// READ requests execute in order: one at the expected PSN goes through
// the framework's in-order path (nic.Ctx.Deliver), which streams its
// responses; one ahead of it is discarded — it must see the WRITEs
// before it — and NACKed with the FNACK flag, so that the sender resends
// it right after the cumulative ACK's packet rather than on a timeout (a
// run of READs has nothing later that could be SACKed).
//
// Drops: nic_duplicate, nic_out_of_order (beyond the bitmap, an early
// READ), nic_invalid_request (sizes that do not add up, a SEND without a
// SETH, an atomic: NAKed, the QP fails, as in gbn), nic_access_error (a
// bad rkey or range: NAKed, the QP fails), nic_rnr (no receive for the
// SSN: RNR NAK, the SEND fails at the sender), nic_stale (responses for
// nothing outstanding).
//
// # Sender (§3.1, §3.2)
//
// The sender keeps a bitmap of the PSNs selectively acknowledged from
// the cumulative ACK on. A NACK moves the cumulative ACK, marks its SACK
// PSN and enters loss recovery; the recovery sequence is the last new
// packet sent before. In recovery the sender "selectively retransmits
// lost packets as indicated by the bitmap, instead of sending new
// packets": first the cumulative ACK's packet, then each later PSN not
// SACKed but below a SACKed one ("considered lost only if another packet
// with a higher sequence number has been selectively acked"), each once
// per recovery, in PSN order. "When there are no more lost packets to be
// retransmitted, the sender continues to transmit new packets (if
// allowed by BDP-FC)", and it "exits loss recovery when a cumulative
// acknowledgement greater than the recovery sequence is received". A
// lost retransmission is therefore recovered by the timer, and a lost
// NACK costs the resending of the PSN it would have SACKed
// (TestLostNACK). Two readings the seed leaves open: a NACK whose
// cumulative ACK is older than the sender's (the hole it names closed
// since) only adds its SACK; and a recovery entered on a NACK does not
// go back over PSNs an earlier recovery resent since the last timeout —
// NACKs sent before such a retransmission arrived still name its hole —
// so each PSN is resent at most once between timeouts.
//
// BDP-FC: "an IRN sender transmits a new packet only if the number of
// packets in flight (computed as the difference between current packet's
// sequence number and last acknowledged sequence number) is less than"
// ceil(BDP / MTU) (Config.BDP, or Config.Window in packets).
// Retransmissions are within the window already. The packet that fills
// the window asks for an ACK.
//
// Timeouts: RTO_low "only when there are a small N number of packets in
// flight", RTO_high otherwise (Config.RTOLow, RTOHigh, N; Config says
// how the defaults follow from the testbed's round trip). The timer runs
// from the last progress (a moved cumulative ACK), or from the first
// send after a quiet spell. On expiry the sender enters loss recovery
// again and every PSN not SACKed from the cumulative ACK up to the last
// sent counts as lost: the cumulative ACK's packet goes first, then the
// others in PSN order, each once; the SACK bitmap is kept, since the
// receiver never discards what it placed. Each expiry without progress
// doubles the timeout (up to Config.MaxRTO; the seed has no backoff), and
// after Config.RetryLimit of them the oldest work request completes with
// nic.StatusRetryExceeded and the QP fails, flushing the rest.
//
// Deviation: §3.1 considers a packet lost "only if another packet with a
// higher sequence number has been selectively acked", and says nothing
// else of what a timeout resends. Read to the letter — the cumulative
// ACK's packet and the holes below the highest SACK — a lost tail of k
// packets, with nothing sent after them to be SACKed, costs k sequential
// timeouts, one per packet (about 56 ms for 5 packets at the defaults:
// two RTO_high and three RTO_low). After a timeout rocetor marks every
// un-SACKed PSN up to the highest sent as lost, as IRN's published
// re-implementations and TCP's SACK recovery after an RTO (RFC 6675)
// do: any tail costs one timeout (TestTailLosses, k = 1 to 8). The price
// is resending what arrived but was not yet acknowledged — the receiver
// coalesces in-order ACKs (AckEvery) and a lost NACK loses its SACK —
// which the receiver drops as duplicates (TestAllNACKsLost: 44 resent
// for one loss whose NACKs were all lost).
//
// IRN has no reordering threshold, so a packet delivered late is resent
// once, spuriously, and the receiver drops whichever copy comes second
// (TestReorder).
//
// # Operations
//
// WRITE and SEND, of any size, are selective end to end. READ works, with
// two limits: a READ request executes only in order (above), and READ
// responses, which travel from responder to requester, are recovered
// Go-Back-N style as gbn does it — a gap in the response PSNs makes the
// requester re-issue the READ from the missing one (rxe's req_retry),
// and later responses of the gap are dropped. (IRN's paper has a
// selective scheme for responses in its §5, which the seed lacks.)
// Atomics and WRITE with immediate are not framework operations. RNR
// NAKs are not retried.
//
// A refusal — an RNR NAK or a fatal one, for a request placed ahead of
// the expected PSN — carries the refused PSN in the BTH and the
// cumulative ACK (expected PSN − 1) in the SACKETH; the requester
// acknowledges only the latter (nic.Ctx.Refuse), not every PSN before
// the refused one as Go-Back-N may. After an RNR NAK the missing PSNs
// are recovered (the refused PSN counts as SACKed for the holes below
// it) and the SEND fails once they are acknowledged; after a fatal NAK
// the unacknowledged work before it completes flushed (TestRefusals).
// The seed does not cover errors; this is the selective reading of
// IBA's rule that a NAK implicitly acknowledges only what the responder
// holds.
//
// # Per-QP memory
//
// QP context (StateBytes): 176 bytes at the default window of 128
// packets —
//
//	64   scalars: send, cumulative-ACK, highest-SACK, retransmission and
//	     recovery pointers, the next MSN and SSN, the timer base, the
//	     window, retry state and flags; the receiver's expected PSN, MSN,
//	     next SSN to complete and ACK count
//	64   four bitmaps of 128 bits (BitmapBytes): the sender's SACK
//	     bitmap, the receiver's arrival, message-end and SEND-end bitmaps
//	48   the descriptors of the two tables below
//
// plus, in host memory (QueueBytes, counted with the send and receive
// queues by nic.Endpoint.QPBytes), 2 KiB: the SSN of each outstanding
// message, by MSN, and the byte count of each SEND placed ahead, by SSN,
// 256 entries each (a power of two above the window). A NIC keeps both
// with the send and receive WQEs it fetches from host memory.
// The bitmaps grow with the window: ceil(BDP/MTU) bits each, rounded up
// to a power of two of at least 64. With the framework's 376-byte QP an
// IRN QP's context is 552 bytes against gbn's 388 and dcp's 732. The
// paper's accounting (§6, not in the seed) is the same kind: a few BDP-
// sized bitmaps per QP — which is what FaSR (seed 001 §I) calls IRN's
// scalability cost.
//
// SR state (nic.SRState, counted the same way for every transport): the
// four bitmaps and the four recovery pointers (cumulative ACK heard,
// highest SACK, retransmission pointer, recovery sequence), 80 bytes a
// QP at a window of 128 packets and 272 at 500 (512-bit bitmaps), with
// the bitmap span as its BDP. The rest of the context is gbn's or SEND
// numbering (docs/experiments.md, "SR memory, one accounting").
//
// # Ablations (§4.3)
//
// The seed's factor analysis takes IRN's two changes to RoCE away one
// at a time (Fig. 7); Config selects each, for experiments (tor/lab's
// irn-fabric, schemes irn-gbn and irn-nobdpfc):
//
//   - GoBackN: go-back-N instead of SACKs. The receiver places nothing
//     ahead of the expected PSN: the first packet past a gap is NACKed
//     (FNACK: discarded, so the sender marks nothing) and the rest are
//     dropped silently until the gap fills, as a RoCE responder does
//     (nic/gbn); the sender goes back to the NACK's PSN, or on a
//     timeout to the oldest unacknowledged one, and resends everything
//     from there through its ordinary path, where BDP-FC still holds
//     it. RTO_low and RTO_high with N stay. The resent packets count
//     as Retransmits and each go-back as a Recovery (TestGoBackN,
//     TestGoBackNRandomLoss).
//   - NoBDPFC: BDP-FC off. A QP's packets in flight are capped only by
//     what its bitmaps track, NoBDPFC packets (they size the bitmaps
//     instead of BDP), so a caller wanting no cap gives the largest
//     message's packets; SACK recovery is unchanged (TestNoBDPFC).
//
// # Counters
//
// Stats (Transport.Stats) counts each event above, one field per event;
// the endpoint's nic.Stats counts requests, retransmissions (all of
// them, READ re-issues included), timer expiries, NAKs (IRN's NACKs
// among them), duplicates and drops as for every transport. roceperf
// reports both (--transport irn, an "irn" object; docs/roceperf.md).
//
// # Performance
//
// Nothing on the packet path allocates (TestAllocs, with losses, NACKs,
// recovery, reordering and timeouts). BenchmarkWriteStream moves one
// 1 KiB WRITE packet through requester and responder in 0.46–0.55 µs on
// the shared 2-CPU development machine (gbn's, in the same runs: 0.44–
// 0.47 µs; an IRN WRITE middle packet carries a 16-byte RETH more under
// the ICRC and goes through the Decorator and a bitmap), and in
// 0.76–1.15 µs per data packet with 2 % of the packets lost and 10 %
// delayed: every packet that overtakes a late or lost one is NACKed
// (0.85 NACK per data packet in that stream) and every late one resent.
//
//	go test -run XXX -bench WriteStream -benchtime 300000x ./nic/irn ./nic
//
// # Configuration
//
//	t, err := irn.New(irn.Config{
//		BDP:        128 << 10, // BDP-FC: ceil(BDP/MTU) packets in flight (or Window: 128)
//		RTOLow:     8e6,       // 8 ms with at most N packets in flight
//		RTOHigh:    16e6,      // 16 ms otherwise
//		N:          3,
//		MaxRTO:     256e6, // backoff cap
//		RetryLimit: 10,
//	})
//	ep, err := nic.NewEndpoint(nic.Config{Transport: t, ...})
//	w, err := dataplane.NewWorker(dataplane.WorkerConfig{...,
//		Classifier: ep.Classifier(rocev2.Classifier{VerifyICRC: true})}) // SACK and OOO on
package irn
