// Package dcp is the RNIC side of DCP (seed 002): header-only-based
// retransmission (§4.3), order-tolerant reception (§4.4) and bitmap-free
// packet tracking with its coarse timeout (§4.5). The switch side —
// trimming into a lossless control queue (§4.2) — is tor/trim; the wire
// formats are rocev2's (docs/wire-formats.md, "DCP").
//
// # On the wire
//
//   - Requests are DCP data packets: tag 10 in the two low DSCP bits
//     (the endpoint's class kept in the four high ones), the DCP
//     extension header after the BTH with the message's MSN (its
//     posting order in the send queue), the retry round (sRetryNo for
//     the oldest unacknowledged message, 0 for later ones, which no
//     timeout has resent) and, for a SEND, its SSN (the order of SENDs,
//     which is the order of the receives they take); and a RETH in every
//     WRITE packet (Decorate).
//   - ACKs and NAKs are DCP ACKs: tag 01, the extension header with the
//     receiver's eMSN and rRetryNo, then the AETH (whose MSN is eMSN
//     too); a positive ACK's PSN is the last packet of message eMSN−1
//     (DecorateAck).
//   - A header-only (HO) packet — tag 11, what the switch left of a data
//     packet it trimmed — goes back to its sender as §4.1 ② says:
//     source and destination MAC, IP and QPN swapped, the PSN and the
//     extension header (MSN, RetryNo, SSN) kept, on the control queue.
//     rocetor sends it with the RC ACKNOWLEDGE opcode and no AETH (the
//     trimmed packet's opcode is not needed to resend it: the sender
//     rebuilds the packet from its work request). That is how the
//     sender's framework hands it to the requester rather than to the
//     responder, and how a QP that carries data both ways tells an HO
//     coming back from one trimmed on its way in: both arrive with the
//     peer's addresses, and the paper does not say how its RNIC tells
//     them apart.
//
// The endpoint's classifier must parse the extension header: the
// transport asks for rocev2.Classifier.DCP (nic.Classifying), which
// nic/host and nictest apply through nic.Endpoint.Classifier. Frames the
// framework builds itself (CNPs) carry the endpoint's DSCP untagged, so
// nic.Config.DSCP must end in 00 in a DCP fabric: the endpoint defaults
// to 24 with this transport and refuses 26 (see "The DSCP caveat" in the
// wire formats).
//
// # Receiver: order-tolerant reception, bitmap-free tracking
//
// Every data packet, in order or not, is placed at once where it
// belongs: a WRITE packet at the address its own RETH names
// (nic.Ctx.Place); a SEND packet in the receive its SSN names
// (nic.Ctx.PlaceRecv: the SSN's distance from the oldest receive's), at
// (PSN − the message's first PSN) × MTU. There is no reorder buffer.
//
// The receiver tracks Config.Messages messages per QP (default 8),
// those from eMSN on, each with a packet counter (§4.5, Fig. 6c): a
// packet adds one to its message's counter, and when the counter equals
// the message's packet count — from the RETH's DMA length of any WRITE
// packet, from the last packet of a SEND — the message is complete
// (mcf). eMSN then moves over the complete messages in MSN order: a
// SEND's receive completes (Cf), in that order, so completions follow
// the posting order even when later messages completed first
// (Stats.Deferred), and one DCP ACK with the new eMSN goes at the end of
// the batch. Each packet costs a counter increment, whatever the
// reordering.
//
// A SEND packet's offset needs its message's first PSN, which its first
// packet gives, or the previous message's first PSN and size: eMSN's
// message always knows it. A SEND packet that arrives before anything
// told it goes back to the sender like an HO packet (Stats.Unanchored),
// which resends it; nothing is held.
//
// rRetryNo (§4.5): a packet of the eMSN-th message with an sRetryNo
// above rRetryNo starts a new round — the counter restarts from zero and
// rRetryNo takes the number (Stats.Recounts); one with a lower number
// belongs to an older round and is dropped. Packets of later messages
// carry retry 0. rRetryNo returns to 0 as eMSN advances.
//
// Exactly once. The counter is only right if each packet arrives once,
// which the lossless control plane and HO-based retransmission give
// (§4.5, "Opportunities"). What breaks it is handled so:
//
//   - a packet of a completed message (a timeout resent it because the
//     ACK was lost, or a late copy) is dropped before it touches memory
//     the application may own again, and the ACK goes again;
//   - a packet of an older retry round is dropped;
//   - a packet of a message that is complete but waits for an earlier
//     one is dropped;
//   - an HO packet returned twice is queued once (the sender looks in
//     its RetransQ);
//   - anything else — the network copied a frame, an HO copy came after
//     its retransmission left — would let the counter reach the size
//     with a packet still missing. The receiver also keeps, per message,
//     the sums of the counted PSNs and of their squares (mod 2^32), and
//     compares them with the message's when the counter reaches its
//     size: a single duplicate always shows, several do unless their
//     PSNs and squares sum exactly like the missing ones'. Such a message
//     is poisoned (Stats.Poisoned): its packets are still placed, but it
//     completes only after the sender's coarse timeout resends it whole
//     in a new round. Eight bytes per message, no bitmap.
//
// Drops: nic_duplicate (the cases above), nic_out_of_order (an
// unanchored SEND packet, returned), nic_invalid_request (a non-DCP
// packet, a message beyond the window — MSN ≥ eMSN + Messages, which a
// peer with the same Messages never sends, since it starts a message
// only within Messages of unaMSN ≤ eMSN —, sizes or offsets that do not
// add up: NAKed, the QP fails, as in gbn; and, dropped without a NAK, a
// later message's packet carrying a retry round, which no peer sends
// either), nic_access_error (a bad rkey or range: NAKed, the QP fails),
// nic_rnr (no receive for the SSN: RNR NAK, the SEND fails at the
// sender), dcp_ho_not_returned (a header-only packet the receiver could
// not return, for want of a frame or of room on its control queue:
// Stats.HONotReturned; the sender's coarse timeout recovers the packet).
//
// # Sender: HO-based retransmission
//
// A returned HO packet becomes a RetransQ entry (MSN, PSN and the retry
// round it names: §4.3's retransmission entry) in the QP's bounded queue
// (Config.RetransQ, default 256 entries). Entries for a message already
// acknowledged or for an older retry round are stale and ignored
// (nic_stale), copies of a queued one too (nic_duplicate); one that
// finds the queue full is dropped (dcp_retransq_full,
// Stats.RetransQOverflows), and the coarse timeout recovers its packet.
//
// Every header-only packet the endpoint drops, for whatever reason, is
// also counted apart by its worker (dataplane.Snapshot.HODrops; roceperf
// reports it as ho_drops), as the switches count theirs
// (rocetor_dcp_ho_drops_total): the header-only packets that die
// anywhere are the losses that cost a coarse timeout.
//
// Next sends, in this order: the resends of a timeout round, the
// RetransQ's entries, then new data. The framework asks the congestion
// control before each call and charges it after, so retransmissions are
// paced exactly like new packets: HO packets arriving in a burst cannot
// turn into a burst of retransmissions on a congested path (§4.3,
// "Incompatible with CC module"; TestPacedRetransmissions). New data
// starts a message only while it is within Config.Messages of unaMSN,
// the oldest unacknowledged message, so the receiver always has a
// counter for it.
//
// A DCP ACK with eMSN completes every message before it
// (nic.Ctx.Ack up to the last PSN of message eMSN−1) and moves unaMSN.
// An RNR or fatal NAK carries eMSN too, and acknowledges only that: the
// receiver places out of order, so the messages from eMSN to the refused
// one need not have arrived (nic.Ctx.Refuse). After an RNR NAK they are
// recovered as usual — nothing from the refused request on is sent or
// resent — and the SEND fails once they are acknowledged; after a fatal
// NAK, which put the receiver's QP in the error state, they complete
// flushed and the refused request with the NAK's status (TestRefusals,
// TestBeyondWindow).
//
// # Send window
//
// The seed's QP scheduler sends from an available window, awin, that
// the CC module gives: new data, up to min(round_quota, awin) bytes, and
// retransmissions, min(16, len, awin/MTU) RetransQ entries (§4.3); the
// seed does not size it. Config.Window is such a window in packets: 0,
// the default, is none (only the congestion control paces a QP); with
// N, a QP sends nothing — new data, RetransQ entries or a timeout
// round's resends — while N of its packets are in flight
// (Stats.WindowFull counts the waits). A packet is in flight from its
// transmission until the sender learns that it left the network: its
// header-only packet came back (it left the data path where it was
// trimmed), or the receiver counted its arrival. DCP acknowledges whole
// messages (eMSN, §4.5), which would hold a message longer than the
// window for ever, so with a window the receiver counts every data
// packet that reaches the QP (mod 2^24, whatever becomes of it) and
// acknowledges each receive batch's arrivals — as ns-3's RNICs
// acknowledge every packet — carrying the count in the AETH's MSN field,
// which is otherwise a copy of eMSN; the sender takes the count's
// advance off its packets in flight, and an older count, overtaken on
// another path, says nothing. Both ends must enable it (like Messages).
// A packet the network loses silently, or an ACK or header-only packet
// lost for good, stays counted until the coarse timeout, which empties
// the window: after RTO of silence nothing the window counts is still
// travelling (TestWindow, TestRandom's windowed seed).
//
// # Coarse timeout (§4.5)
//
// The sender keeps one timer for unaMSN, restarted whenever unaMSN
// advances. On expiry sRetryNo goes up and every packet of the
// unaMSN-th message sent so far is resent, ahead of everything else
// (Stats.FallbackTimeouts, FallbackRetransmits). The timer also restarts
// when a packet of the unaMSN-th message is sent, so that it measures
// silence after the message's last packet rather than the message's
// transmission time: at 400 Gb/s (the paper) a several-MB message takes
// about 100 µs, at 1 Gb/s (a veth testbed) 1 MiB takes 8 ms.
//
// Config.RTO defaults to 64 ms, a coarse timeout as the paper's and
// ConnectX's (67 ms): HO-based retransmission recovers trimmed packets
// within a round trip, so this timer only catches what the control plane
// lost, and an early expiry resends a whole message. With Messages
// outstanding, the oldest message's last packet can queue behind the
// later ones for longer than gbn's 16 ms on a loaded two-core testbed:
// 16 ms fired 12 times in one 50 MiB dcp-loss run with five packets
// trimmed, resending 10,510 packets.
// Each expiry without progress doubles it (up to MaxRTO, 64×RTO); after
// Config.RetryLimit expiries (default 7) the oldest work request
// completes with nic.StatusRetryExceeded and the QP fails.
//
// # Not covered
//
// §4.4 covers Send, Write and Write-with-Immediate; READ is not a DCP
// operation here: the responder NAKs it as an invalid request, so it
// completes with nic.StatusRemoteInvalid and the QP fails. (The
// framework has no WRITE with immediate.) An RNR NAK is not retried.
//
// # Per-QP memory
//
// QP context (StateBytes): 356 bytes at the defaults (12 more with a
// window: the sender's packets in flight and the last arrival count it
// heard, the receiver's count) —
//
//	44   scalars: send and timeout-round pointers, unaMSN, sRetryNo,
//	     RetransQ head and length; eMSN, rRetryNo, the next SSN
//	192  the receiver's tracking, 8 messages × 24 bytes (TrackingBytes):
//	     counter (4), flags mcf/Cf/… (1), PSN sums (8), packet count (4),
//	     first PSN (4), a SEND's last packet length (2)
//	96   the sender's message table, 8 × 12 bytes: first PSN, packet
//	     count, SSN
//	24   the RetransQ's descriptor
//
// plus the RetransQ itself, 256 × 8 = 2048 bytes, which DCP keeps in host
// memory (QueueBytes, counted with the send and receive queues by
// nic.Endpoint.QPBytes). With the framework's 376-byte QP, a DCP QP's
// context is 732 bytes; Go-Back-N's state is 12 bytes (388 in all),
// which is what DCP pays for tolerating reordering without a bitmap.
//
// The paper counts 2 bytes per message — a 14-bit counter and the two
// flags — 16 bytes for 8 messages (Table 3 says 32 bytes per QP against
// 320 for a BDP-sized bitmap at 400 Gb/s and 10 µs). Our counting state
// proper is 5 bytes per message: the counter is 32 bits because a
// message may be nic.MaxMessage (1 GiB, 2^22 packets at MTU 256; 14 bits
// cover 16 MiB at 1 KiB). The duplicate check adds 8; the packet count,
// first PSN and SEND length (10) are what a hardware RNIC reads from the
// receive WQE and the RETH, and the sender's 12 bytes per message what it
// fetches again from the send queue (§4.3's fetch-and-drop). A
// BDP-sized bitmap for a 10 Gb/s, 1 ms software path would be 153 bytes
// per QP, and gbn keeps none because it accepts nothing out of order.
//
// SR state (nic.SRState, counted the same way for every transport): the
// receiver's tracking (192 bytes) and the RetransQ's head and length and
// rRetryNo (5), 197 bytes a QP whatever the BDP; the sender's message
// table is what a NIC fetches again from the send queue, and the rest is
// gbn's or RC state (docs/experiments.md, "SR memory, one accounting").
//
// # Counters
//
// Stats (Transport.Stats) counts each event above; the endpoint's
// nic.Stats counts requests, retransmissions (Retransmits: both kinds),
// timer expiries, duplicates and drops as for every transport. roceperf
// reports both (docs/roceperf.md).
//
// # Performance
//
// Nothing on the packet path allocates (TestAllocs, with trimming,
// returns, retransmissions and reordering). BenchmarkWriteStream moves
// one 1 KiB WRITE packet through requester and responder in 0.49–0.59 µs
// on the shared 2-CPU development machine (gbn's, in the same runs:
// 0.45 µs — a DCP packet carries 24 more header bytes under the ICRC and
// goes through the Decorator), and in 0.61–0.63 µs with 2% of the
// packets trimmed, returned and resent and 10% reordered:
//
//	go test -run XXX -bench WriteStream -benchtime 300000x ./nic/dcp ./nic
//
// # Configuration
//
//	t, err := dcp.New(dcp.Config{
//		Messages:   8,    // tracked messages per QP (power of two)
//		RetransQ:   256,  // RetransQ entries per QP
//		RTO:        64e6, // 64 ms coarse timeout, doubled per expiry
//		MaxRTO:     1e9,
//		RetryLimit: 7,
//		Window:     0,    // packets in flight per QP (0: none)
//	})
//	ep, err := nic.NewEndpoint(nic.Config{Transport: t, ...}) // DSCP 24
package dcp
