// Package fasr is FaSR, "Fast and Scalable Selective Retransmission for
// RDMA" (seed 001, Huang et al.): selective retransmission whose common
// case — one packet lost per recovery — needs no bitmap (the fast path,
// §III-B), and whose bitmaps, when several are lost (the slow path), come
// from a small pool the endpoint's QPs share (the two-level shared SR
// pool, §III-C), so that a QP's own context grows by a pointer rather
// than by a BDP-sized bitmap. It is the third selective transport on the
// nic framework, beside nic/irn (per-QP bitmaps) and nic/dcp
// (bitmap-free counting with a lossless control plane); nic/gbn is the
// baseline all are measured against.
//
// # On the wire
//
//   - Requests use the OOO layout (rocev2.Classifier.OOO,
//     docs/wire-formats.md), the headers §IV-D gives FaSR: a RETH with
//     the packet's own address in every WRITE packet ("All WRITE packets
//     carry their target remote memory address") and a SETH with the
//     SEND's sequence number and the packet's index in every SEND packet
//     ("All SEND packets carry the … send message sequence number (MSN)
//     and … the payload offset"). READ requests are standard.
//   - Every ACK carries a SACKETH (rocev2.Classifier.SACK): the BTH PSN
//     is the cumulative ACK, RCV-NXT−1; the SACK PSN is sack-high, the
//     highest PSN received (outside a recovery, the cumulative ACK
//     again); the lost-cnt byte holds the receiver's lost-cnt, 0 to 7 —
//     the seed's 3 bits (§IV-D); the flags carry the lost-cnt overflow
//     (§IV-D: "marked using the unused op-type value", here a flag bit)
//     and, on an FNACK, the FNACK flag with the discarded packet's PSN
//     as SACK PSN. A SACK is a positive ACK (syndrome ACK) whose SACK PSN
//     lies past the cumulative ACK. A recovery that fell back to
//     Go-Back-N sends gbn's NAK (code 0, PSN sequence error) carrying
//     RCV-NXT. The AETH MSN is 0: FaSR does not count messages, and the
//     requester completes by PSN.
//
// The transport asks for both classifier settings (nic.Classifying);
// nic/host and nictest apply them through nic.Endpoint.Classifier.
//
// # Receiver: fast and slow paths (§III-B 1)
//
// The receiver compares each request's PSN with RCV-NXT. A packet at
// RCV-NXT is placed and RCV-NXT moves on; a packet behind it is a
// duplicate (dropped, acknowledged again; a READ request restarts its
// responses). A WRITE or SEND packet ahead of it starts a loss recovery:
// the QP's responder takes an SR state unit from the shared pool, places
// the packet at once (a WRITE at its RETH's address, a SEND into the
// receive its SSN names at index × MTU) and sets lost-cnt to the gap —
// "the interval between PSN and RCV-NXT". In the recovery, lost-cnt
// grows by the gap between a new packet and sack-high, and falls by one
// (by the PSNs it covers, for a READ request) when the packet at RCV-NXT
// arrives.
//
//   - Fast path, lost-cnt 1: only RCV-NXT is missing, so every PSN up to
//     sack-high arrived. Only sack-high is updated, and when RCV-NXT's
//     retransmission arrives RCV-NXT jumps to sack-high+1 and the
//     recovery ends, the unit returned.
//   - Slow path, lost-cnt > 1: arrivals are recorded in a bitmap — a
//     list of 16-bit blocks from the pool — and RCV-NXT moves to the
//     bitmap's next zero when the packet at RCV-NXT arrives, releasing
//     blocks from the head of the list. Arrivals only touch the tail.
//   - Switching: when lost-cnt grows past 1 the QP moves to the slow
//     path; what the fast path knew — (RCV-NXT, sack-high] arrived — is
//     kept as the 10-bit compression-cnt when it is at least one block
//     long, so that the bitmap starts recording after it (bitmap
//     acceleration, §III-D), and written bit by bit otherwise. When
//     lost-cnt falls back to 1 the bitmap is released and the QP is on
//     the fast path again.
//   - FNACK (§III-D): a packet between RCV-NXT and sack-high is a
//     retransmission sent after RCV-NXT's, which therefore was lost. It
//     is discarded rather than recorded in the middle of the bitmap, and
//     an FNACK carrying its PSN goes back; the sender restarts from
//     UNACK. A copy of sack-high itself is a duplicate.
//   - Lost-cnt overflow (§III-D): past 7, lost-cnt stays 7 until the
//     recovery ends, RCV-NXT comes from the bitmap alone, and every ACK
//     carries the overflow flag.
//   - Pool exhaustion (§III-D): with no unit free, or too few blocks for
//     an arrival, the QP falls back to Go-Back-N for the rest of the
//     recovery: what it recorded stays; later out-of-order packets are
//     dropped and one NAK per RCV-NXT goes back, as gbn does. When the
//     recovery ends the unit returns, and the next loss is selective
//     again. A READ request ahead of RCV-NXT does the same: a READ
//     executes in order, after the WRITEs before it.
//
// Completions: a SEND's last packet records, by SSN, where its message
// ends and its length (in host memory, with the receive WQEs); receives
// complete in SSN order — the posting order — as RCV-NXT passes those
// ends, whatever the arrival order.
//
// Acknowledgements: in order and outside a recovery, one coalesced ACK
// per batch for the packets that ask (the last of each message) and
// every Config.AckEvery packets. During a recovery every arrival is
// acknowledged: a packet that opens a gap at once with a SACK — preceded
// by an ACK reporting the run since the last SACK, so that the run is
// not taken for lost — a contiguous one coalesced per batch, the arrival
// of RCV-NXT at once (the seed's AACK), and, overflowed, every one at
// once.
//
// # Sender (§III-B 2)
//
// The sender keeps no lost-cnt of its own: it compares the lost-cnt each
// ACK carries with the last one heard. On the first SACK it takes a unit
// and resends [UNACK, SACK) "regardless of the value of lost-cnt"; in the
// recovery a SACK past sack-high with a gap resends the gap only if
// lost-cnt grew (or overflowed) — data loss — and otherwise marks it
// arrived — SACK loss (lost or coalesced ACKs). Its path follows the
// lost-cnt it hears: at 1 it needs no bitmap ((UNACK, sack-high] arrived),
// above 1 it records arrivals in blocks from the same pool, compressing
// the fast path's run. Resends go through one cursor before new data,
// skipping what the SR state knows arrived; the bitmap's head follows
// UNACK, and the unit returns once UNACK passes sack-high.
//
// Expiry by lost-cnt: 0 (nothing selective heard) resends from UNACK,
// Go-Back-N; 1 resends UNACK only; more, or overflowed, resends UNACK and
// the bitmap's zeros up to sack-high. An FNACK does the same at once,
// without backoff, once until a new ACK moves UNACK. Each expiry without
// progress doubles the timeout (Config.RTO up to MaxRTO); after
// RetryLimit the oldest work request completes with
// nic.StatusRetryExceeded and the QP fails, returning its units.
//
// A Go-Back-N NAK resends from RCV-NXT everything sent, except what the
// SR state knows arrived (the receiver kept it); a requester that finds
// no unit or block recovers Go-Back-N from UNACK until a new ACK.
//
// # Two-level shared SR pool (§III-C)
//
// Each endpoint has Config.Units SR state units of 24 bytes — sack-high,
// lost-cnt, the compression-cnt, the bitmap's base PSN, head and tail
// block pointers, flags — with an availability bitmap (level 1), and
// Config.Blocks bitmap blocks of 16 bits, with a 16-bit pointer each
// linking a unit's blocks into a list and an availability bitmap (level
// 2). A QP's context holds two 16-bit SR state pointers, the requester's
// and the responder's, set only while that side recovers: a QP's two
// directions recover independently, so each takes its own unit. The
// defaults are §III-D's sizing for a BDP of 500 packets at 2% loss — 20
// units, 70 blocks (10-bit blocks there; §V-A's testbed has 16-bit
// ones); Config.BDP scales them for another BDP (ceil(20·BDP/500) units,
// ceil(70·BDP/500) blocks: 6 and 18 at 128 packets), since the
// out-of-order and lost packets of all QPs together are bounded by the
// BDP (§III-A). Everything is allocated by New; the packet path flips
// bits.
//
// # Operations
//
// WRITE and SEND, of any size, are selective end to end. READ works: a
// READ request executes only in order (one ahead of RCV-NXT makes the
// recovery Go-Back-N), and its responses, which travel the other way,
// are recovered as gbn does — a gap re-issues the READ from the missing
// PSN (rxe's req_retry), later responses of the gap are dropped. (§IV-D
// has the responder schedule an acknowledged "R-READ" like a WRITE, which
// the framework does not offer.) lost-cnt counts PSNs, so a lost READ
// request counts as many as the responses it asks for. Atomics and
// immediate data are not framework operations; RNR NAKs are not retried.
// An RNR or fatal NAK carries RCV-NXT−1 in its SACKETH, and the
// requester acknowledges only that (nic.Ctx.Refuse): after an RNR NAK
// it resends [UNACK, refused PSN) and fails the SEND once they are
// acknowledged, after a fatal one the unacknowledged work before it
// completes flushed (TestRefusals). A refused packet is never recorded
// as arrived: a packet ahead of RCV-NXT is placed first and recorded
// only once placed.
//
// Drops: nic_duplicate (behind RCV-NXT, a copy of sack-high, a stale
// response), nic_out_of_order (FNACK-discarded, in a Go-Back-N fallback,
// a SEND more SENDs ahead than the SEND-end table holds, a response after
// a gap), nic_invalid_request (sizes that do not add up, a request
// without the OOO layout, an atomic: NAKed, the QP fails),
// nic_access_error (NAKed, the QP fails), nic_rnr (RNR NAK, the SEND
// fails at the sender), nic_stale.
//
// # Deviations from the seed
//
//   - The seed acknowledges every packet; rocetor coalesces contiguous
//     arrivals per batch during a recovery (never a gap, an AACK or an
//     overflowed arrival), which the sender reads as SACK loss — exactly
//     what lost-cnt is there to tell apart.
//   - The seed's SR state unit holds IRN's SR state [23] and the bitmap
//     pointers; here a unit serves one side of one QP, and the rest of
//     the QP's state (send and receive pointers, 36 bytes) is per QP.
//   - When lost-cnt grows by less than a SACK's gap (data loss and SACK
//     loss in the same gap), the whole gap is resent, as §III-B 2 says;
//     an ACK lost right after a retransmission arrived can make a later
//     gap look like SACK loss, which an FNACK or the expiry then
//     recovers (UNACK is always resent).
//   - READ as above; SEND placement uses the OOO layout's SETH (SSN and
//     packet index) rather than §IV-D's 3-byte offset.
//
// # Counters
//
// Stats (Transport.Stats) has one field per event above, both sides;
// FastPathRatio is the share of SR operations done on the fast path (the
// seed's Fig. 9(b)). The endpoint's nic.Stats counts requests,
// retransmissions, timer expiries, NAKs and drops as for every
// transport. roceperf reports both (--transport fasr, a "fasr" object;
// docs/roceperf.md).
//
// # Memory
//
// Per QP (StateBytes), 36 bytes: the requester's retransmission cursor
// (8), next MSN and SSN (8), SR state pointer, retry count, backoff and
// flags (5); the responder's RCV-NXT, next SSN to complete, SR state
// pointer, ACK count and flags (13); padding. In host memory
// (QueueBytes, counted with the send and receive queues by
// nic.Endpoint.QPBytes), 3 KiB at the default window of 128: the SSN of
// each outstanding message and where each SEND placed ahead ends, 256
// entries each. Shared (SharedBytes), 784 bytes at the defaults: 20 units
// × 24, 70 blocks × (2 + 2 pointer), and the two availability bitmaps —
// the same for 1 QP or 5,000. At 5,000 QPs FaSR's context is
// 5,000 × 36 + 784 = 180,784 bytes, 36.2 per QP; gbn's is 12 per QP,
// IRN's 176 (four 128-bit bitmaps and its pointers), which is the
// seed's point: FaSR adds two pointers per QP and a constant pool, not
// a bitmap per QP. (The seed's accounting, §V-A: 1 B of SR state
// pointer per QP and 1.6 KB shared.)
//
// SR state (nic.SRState, counted the same way for every transport, over
// gbn's): 8 bytes per QP — the two SR state pointers and the end of the
// retransmission cursor, whose start is gbn's send pointer — and the
// pool, shared, sized for Config.BDP. At 5,000 QPs that is 40,232 bytes
// at a BDP of 128 packets (IRN's: 400,000, 9.9×) and 40,784 at 500
// (IRN's: 1,360,000, 33×); docs/experiments.md ("SR memory, one
// accounting") has the table and the measured heap beside it.
//
// # Performance
//
// Nothing on the packet path allocates (TestAllocs: a WRITE stream with
// losses, SACKs, both paths and retransmissions). BenchmarkWriteStream
// moves one 1 KiB WRITE packet through requester and responder in
// 0.49–0.54 µs on the shared 2-CPU development machine (the nic
// package's gbn stream, in the same runs: 0.48–0.56 µs), and in
// 0.52–0.68 µs with one packet in 50 lost and recovered by a SACK:
//
//	go test -run XXX -bench WriteStream -benchtime 300000x ./nic/fasr ./nic
//
// # Configuration
//
//	t, err := fasr.New(fasr.Config{
//		Window:     128,  // packets in flight per QP
//		AckEvery:   16,   // in-order ACK coalescing
//		RTO:        16e6, // 16 ms, doubled per expiry
//		MaxRTO:     1e9,
//		RetryLimit: 7,
//		BDP:        500, // packets the pool is sized for: 20 units, 70 blocks
//		Units:      0,   // SR state units per endpoint (0: from BDP; -1: none)
//		Blocks:     0,   // 16-bit bitmap blocks per endpoint (0: from BDP; -1: none)
//	})
//	ep, err := nic.NewEndpoint(nic.Config{Transport: t, ...})
//	w, err := dataplane.NewWorker(dataplane.WorkerConfig{...,
//		Classifier: ep.Classifier(rocev2.Classifier{VerifyICRC: true})}) // SACK and OOO on
//	fmt.Println(t.StateBytes(), t.SharedBytes()) // 36 784
package fasr
