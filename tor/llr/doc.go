// Package llr is link-local retransmission between two switches:
// Protego (seed 003, §3 and appendices A–B). A protected link corrupts
// frames; the two switches at its ends recover the losses between
// themselves, at sub-RTT timescales, so that the end hosts never see
// them. Nothing in the protocol needs a switch at either end: the
// simulator (tor/fabric) runs the same Stage and Port at a host's end of
// a protected host link, as an llr-capable NIC would.
//
// # What it does
//
// Sender side, on a protected egress port (§3.1–§3.3, §3.5, appendix
// A.2). Every frame the pipeline puts on the port's "data" queue gets an
// 8-byte shim under EtherType 0x88b5 (rocev2.Shim: a 16-bit sequence
// number with an era bit, psn.Link, the packet type and the inner
// EtherType) and stays in the port's Tx buffer until the neighbour's
// cumulative ACK covers it: the frame itself, held in the worker's
// memory (Config.TxFrames, dataplane.Mem.Hold), or a copy past those
// frames. Protego's buffer keeps copies; holding the frame spares a
// 1 KB copy a packet (docs/performance.md); a retransmission copies it
// then, with the ECN field it had when taken, as a copy taken then
// would carry it. A loss notice makes the stage retransmit the
// named sequences on the "retransmit" queue, Copies(target, actual)
// copies each (Eq. 1, §3.4), from the configured or the measured loss
// rate. When frames are unacknowledged and the data queue is empty, a
// minimum-size dummy on the "idle" queue announces the sequence position,
// so that a lost tail shows as a gap at once, without a timeout (§3.2);
// one at a time, and the same position is repeated only every
// DummyInterval. PFC frames from the neighbour pause the data queue only
// (priority 3 in DefaultEgress); "control", "retransmit" and "idle"
// have no PFC priority and are never paused.
//
// Receiver side, on the same port (§3.1, §3.3–§3.5, Algorithms 1 and 2).
// ackNo is the next sequence to forward, and the cumulative ACK; the
// receiver also knows the highest sequence sent. A gap (or a dummy beyond
// the highest seen) is a loss: a loss notice on the "control" queue names
// every missing sequence, 255 at most per notice (Count, see
// docs/wire-formats.md). Copies of sequences already forwarded or held
// are dropped (Algorithm 1). In Blocking mode out-of-order frames wait
// in the reordering buffer and leave in sequence; the buffer's level
// sends PFC pause at Config.Pause and resume at Config.Resume (Algorithm
// 2, with the pause refreshed at half its length while it lasts); a head
// of line missing while ackNo has not advanced for ackNoTimeout (§3.5),
// counted from when ackNo stopped there or the loss was found, whichever
// is later — a run lost while another held the head, or dropped by a
// full reordering buffer, gets its whole timeout once it is the head —
// is skipped with the rest of its missing run, so the link never
// stalls. In NonBlocking mode (ProtegoNB) every new frame is forwarded
// at once; recovery and de-duplication are the same. The receiver's
// ackNo rides in the shim of every frame leaving by the port
// (piggybacked, §3.1); with no such frame an explicit ACK waits on the
// idle queue. Beyond Protego, a head of line still missing NoticeRetry
// after its notice is named again: a lost notice then costs a retry, not
// an ackNoTimeout. And an ACK stale for DummyInterval with nothing
// carrying it goes as an explicit ACK on the control queue
// (AcksControl), one per DummyInterval at most: the idle queue runs only
// when the data queue is empty, and a busy reverse direction whose
// sender is off (dormant, frames unshimmed) would otherwise starve the
// neighbour's ACKs until its Tx buffer filled.
//
// Algorithm 2's pauses are short (Config.PauseTime, AckTimeout/4) and
// refreshed at half their length while the buffer stays above Resume,
// rather than 0xffff quanta: a lost pause is made good by the refresh, a
// lost resume by the pause running out, so the loss of any one PFC frame
// stalls the link PauseTime at most (a 0xffff pause lasts 33 ms at 1
// Gbit/s).
//
// # Sessions
//
// Protego assumes both switches start together and never restart (§3.5
// numbers from 0 for the link's life). rocetor gives the link a session:
// each side draws a random non-zero epoch when it starts and announces
// it in a sync frame (rocev2.ShimSync) on the control queue, with its
// wire position — the sequence of the next frame it numbers, stamped by
// the Port as the sync leaves — and the neighbour's epoch as last heard.
// A receiver that hears a new epoch starts over at that position
// (Resyncs counts the neighbour's restarts; frames it held for the old
// session are dropped, ResyncDropped). A sender numbers frames only once
// the neighbour has echoed its epoch (Sessions): until then, one round
// trip after either side starts, frames cross unprotected
// (UnprotectedSync), and ACKs are not taken, as they may be of another
// session. A receiver that has heard no sync yet passes numbered frames
// on as unprotected ones (RxNoSession). A sync with SyncNeed asks for an
// answer; a side without a confirmed session repeats its sync from
// NoticeRetry on, the interval doubling to a second. So a restart of
// either side, in either mode, is recognised within a round trip: no
// frame of the new session is taken for a duplicate of the old one's,
// and no stretch of the old one's counts as lost.
//
// # Where it runs: a stage and a port
//
// The sender half is a stage (Stage.Process) placed after every stage
// that chooses ports and queues (tord: trust → fwd → netrt → trim → llr).
// Sequence numbers are given when the frame is queued, not when it is
// sent: a sequence must follow the order frames take on the wire, and
// only one FIFO keeps that order whatever the scheduler and PFC do. So
// only the data queue is protected, and frames on other queues (every
// DCP header-only packet, NetRT's messages and pool retransmissions)
// cross unprotected, counted in UnprotectedQueue. Frames that earlier
// stages emit later (NetRT's released packets) pass llr like any other
// (dataplane.Ctx.Emit). The Tx buffer therefore holds the protected
// frames waiting on the data queue as well as those in flight: size
// tx_buffer for the data queue's backlog plus a round trip. An impaired
// port (tor/impair) sits inside llr's wrapper, so every frame llr sends
// — copies, dummies, notices, ACKs, syncs — meets the wire's loss.
//
// The receiver half is a dataplane.Port that wraps the protected port
// (Stage.Wrap): the worker polls the wrapper, which de-duplicates,
// reorders and strips the shim before the worker classifies, so every
// stage sees the neighbour's stream as it was sent; held frames are
// released into later batches. Its Transmit writes the ACK into the
// shims leaving by the port. What needs the clock or makes frames
// (notices, retransmissions, dummies, ACKs, PFC, ackNoTimeout) happens
// in Stage.Poll, in the same worker loop, before transmission; timers
// only wake a sleeping worker.
//
// # Dormant links and the corruption monitor
//
// Protego lies dormant until a link corrupts (§2.3, appendix C).
// Config.Dormant starts every sender switched off. An idle sender sends
// frames as they are, counted as UnprotectedOff; the receiver at the
// other end passes unshimmed frames through, so a link can be switched
// on one side at a time. Numbering resumes where it stopped: the
// receiver sees no gap. With Config.Watch an idle sender still numbers
// its frames (shim type watch, 8 bytes each; no copy, no
// retransmission, no dummy), once nothing it protected is
// unacknowledged: the receiver counts the gaps of a dormant link as it
// does those of a protected one.
//
// Monitor is appendix C's corruptd, run by each switch for the links it
// receives on: it estimates the incoming loss rate over a moving window
// of frames from the gaps and from the interface's error counters, and
// while the rate is at or above the threshold asks the neighbour — the
// sender whose frames are lost — to protect the link, with a ShimProtect
// frame a interval carrying the rate (in-band, where corruptd used a
// Redis channel). The neighbour switches its sender on and takes the rate
// as Eq. 1's actual loss. Protection then stays on: a corrupting link is
// repaired, not outgrown. Stage.SetActive is an operator's override
// (tord: torctl llr on|off PORT), which requests do not change until
// Stage.Release (torctl llr auto PORT).
//
// # Frames that cannot grow
//
// The shim takes 8 bytes from the frame's headroom (an AF_XDP frame has
// 256) or, failing that, its tailroom. A frame with neither
// (UnprotectedNoRoom), or longer than Config.MaxFrame with the shim
// (UnprotectedTooBig), is sent unprotected rather than dropped: the end
// hosts recover it if the link loses it, as without llr. tord sets
// MaxFrame from the port's MTU; raise the protected link's MTU by 8 on
// both ends to protect full-size frames. The same holds when the Tx
// buffer is full (UnprotectedTxFull): llr degrades to plain forwarding
// and never drops a frame for its own want of room. Unprotected frames
// pass the neighbour's receiver at once, so in Blocking mode they may
// overtake held frames.
//
// # Drops
//
// The port wrapper consumes the link's own frames (dummies, ACKs, loss
// notices, syncs, protection requests: RxConsumed) and drops duplicates
// and malformed shims itself, counting them in PortStats (Duplicates,
// RxMalformed); they never reach the worker. A frame received while
// the reordering buffer holds its copy is held there (Held, until
// Released or ResyncDropped), not in the worker's Mem. A full reordering buffer drops the out-of-order frame and asks
// for it again (RxBufferFull). A sequence outside the receiver's window,
// which no session produces, is malformed.
//
// # Budgets
//
// The reordering buffer holds copies in a byte ring of exactly
// Config.RxBuffer bytes per port; the Tx buffer holds up to
// Config.TxFrames frames of the worker's Mem and copies the rest into a
// ring of Config.TxBuffer bytes, whose span counts the held frames' bytes
// as it would their copies, so that what fits does not depend on where
// a frame is kept. TxBytes and RxBytes (with their high-water marks)
// count the ring spans, which never exceed the budgets; TxHeld the held
// frames, never above TxFrames. The sender never has more than Window
// sequences unacknowledged. Nothing is allocated after NewStage.
//
// # Amplification bounds
//
// Going beyond Protego, which answers every loss notice at once: one
// notice makes the sender send at most MaxNoticeFrames frames (it
// names at most 255 sequences, Count, of those still in the Tx buffer,
// each sent in at most MaxCopies copies; TestNoticeBound), and per port
// the retransmissions notices draw stay within RetxBurst + RetxRate·t
// bytes over any t (a token bucket; defaults Tx buffer and half the
// port's shaped rate, 5 Gbit/s unshaped): notices beyond it wait in
// their ring and are served as it refills (RetxLimited counts the
// waits; TestNoticeRate), so the strict-priority retransmit queue
// cannot starve the data queue whatever the neighbour asks. Who may
// send llr frames at all is tor/trust's: tord drops every shim that
// reaches the pipeline, which on a protected port llr's receiver has
// already consumed or stripped.
//
// # Counters
//
// PortStats per protected port (Stage.Snapshot, refreshed every
// millisecond of worker time): see its fields. MeasuredLoss is
// LossesDetected/Expected, EffectiveLoss is Skipped/Expected.
// HeadWaitMax and its companions record the longest time the head of
// line stood missing with frames held behind it, and why (notice
// retries during it: its notice, or every copy, was lost; the head
// held but not released; ackNoTimeout): the reordering buffer grows at
// the link's rate for as long as the head waits, so they say what set
// its peak.
//
// # Configuration
//
// In tord's YAML (both switches list their side of the link; with more
// than one worker, the protected links are dealt round the workers, one
// worker's stage runs each link's sender and receiver, and the others
// hand it what they receive there: tor/pipeline.Owners; Links addresses
// each link's stage for tord's monitor, admin API and metrics):
//
//	llr:
//	  ports: [core]
//	  mode: blocking      # blocking | nb
//	  tx_buffer: 256KiB   # per port
//	  rx_buffer: 256KiB   # per port (blocking)
//	  pause: 192KiB
//	  resume: 64KiB
//	  ack_timeout: 1ms    # pauses last a quarter of it
//	  notice_retry: 0     # a missing head of line named again after; 0: ack_timeout/4
//	  target_loss: 1e-9
//	  actual_loss: 0      # 0: measured
//	  copies: 0           # 0: Eq. 1
//	  dormant: true       # off until the neighbour's monitor asks
//	  watch: true         # number frames while off, so losses show
//	  monitor:            # this side's corruption monitor
//	    interval: 1s
//	    window: 100000000 # frames
//	    threshold: 1e-8
//
// and in Go:
//
//	st, err := llr.NewStage(llr.Config{Ports: 1 << core})
//	lp, err := st.Wrap(core, xdpPort, mem) // the worker polls lp, not xdpPort
//	... Ports: {host, lp}, Stages: {fwd, …, st} ...
//
// # Limits
//
// One worker per protected link: with several, each would sequence its
// share of the link and the neighbour could not tell the streams apart.
// While a session opens (a round trip after a restart, longer if a sync
// is lost) frames cross unprotected, and a frame the wire loses then is
// left to the end hosts. Frames a restarted switch's predecessor had
// taken and not yet acknowledged are not sent again: they are in the
// neighbour's old session. A restart that draws the epoch it had before
// (one in 65,535) goes unnoticed and behaves as before sessions.
package llr
