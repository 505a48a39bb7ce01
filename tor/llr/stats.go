package llr

// PortStats are the counters of one protected port (never per flow).
// Gauges say "now"; the rest count since the stage was made. The port is
// both the sender towards its neighbour (first block) and the receiver
// from it (second block).
type PortStats struct {
	// Sender.
	Protected uint64 // frames given a sequence number and kept in the Tx buffer (shim type original)
	ShimBytes uint64 // bytes the shim added to protected frames (8 each)
	// Frames the pipeline sent out of the port unprotected, by reason.
	UnprotectedQueue  uint64 // on another queue than the data queue (sequence follows one FIFO)
	UnprotectedTooBig uint64 // Config.MaxFrame would be exceeded with the shim
	UnprotectedNoRoom uint64 // the frame memory has no 8 bytes before or after the frame (or, for a frame NetRT holds in place, no frame to copy it into)
	UnprotectedTxFull uint64 // the Tx buffer's bytes, records or the Window of sequences are spent
	UnprotectedShim   uint64 // already carries a shim (from a port that is not protected here)
	UnprotectedOff    uint64 // sent while the sender was switched off (Stage.SetActive, Config.Dormant)
	UnprotectedSync   uint64 // sent before the neighbour confirmed this side's session (a round trip after either side starts)
	TxBytes           int    // Tx buffer bytes held now; never above Config.TxBuffer
	TxBytesMax        int    // high-water mark of TxBytes
	TxFrames          int    // sequences sent and not yet acknowledged, now
	TxHeld            int    // of which the Tx buffer holds as the frame itself, not a copy (Config.TxFrames), now
	TxCopied          uint64 // of Protected, frames kept as copies: TxFrames were all held (or are 0)
	NoticesReceived   uint64 // loss notices from the neighbour
	NoticesStale      uint64 // of which naming nothing still in the Tx buffer
	LossesNotified    uint64 // sequences the notices asked for (the measured loss rate's numerator)
	RequestsDropped   uint64 // notices not served: the request ring was full
	Retransmitted     uint64 // sequences retransmitted (one per named sequence)
	Copies            uint64 // retransmitted frames (Eq. 1 copies of each)
	RetxRefused       uint64 // copies the retransmit queue refused
	RetxLimited       uint64 // times serving loss notices waited for the retransmission budget (RetxRate, RetxBurst)
	Dummies           uint64 // dummies sent from the idle queue (§3.2)
	SyncsSent         uint64 // session syncs sent (rocev2.ShimSync): at start, on the neighbour's, and retries
	Sessions          uint64 // sessions the neighbour confirmed: 1, and one more for each restart of either side
	Watched           uint64 // frames numbered while switched off, without a copy (Config.Watch)
	ProtectAsked      uint64 // protection requests sent to the neighbour (Stage.RequestProtection)
	ProtectRequests   uint64 // protection requests from the neighbour
	Activations       uint64 // of which switched the sender on
	ProtectIgnored    uint64 // of which ignored: an operator's override held the sender

	// Receiver.
	RxProtected    uint64 // protected frames (original or retransmit) received
	RxUnprotected  uint64 // frames without a shim, passed as they are
	RxWatched      uint64 // numbered frames of a sender switched off (Config.Watch), passed at once
	RxMalformed    uint64 // shims cut short, unknown types, empty loss notices: dropped
	RxConsumed     uint64 // control shims (dummies, ACKs, loss notices, syncs, protect requests) read and freed here: not lost
	Delivered      uint64 // protected frames handed to the pipeline, shim stripped
	Held           uint64 // of which held first in the reordering buffer (Blocking)
	Released       uint64 // of which released from it in sequence
	Duplicates     uint64 // copies of sequences already delivered or held: dropped (Algorithm 1)
	Expected       uint64 // sequences the neighbour is known to have sent (the loss rates' denominator)
	LossesDetected uint64 // sequences found missing (gaps, and dummies beyond the last seen)
	HolesMerged    uint64 // missing runs merged into the previous one for want of table room
	NoticesSent    uint64 // loss notices sent (each names up to 255 sequences)
	NoticeRetries  uint64 // of which naming a head of line again after Config.NoticeRetry
	AckTimeouts    uint64 // ackNoTimeout expiries (§3.5)
	Skipped        uint64 // sequences skipped by them: lost for good (the effective loss rate)
	SyncsReceived  uint64 // session syncs from the neighbour
	Resyncs        uint64 // new sessions of the neighbour after its first: it restarted, the receiver started over
	ResyncDropped  uint64 // frames held for an old session of the neighbour, dropped when it restarted (Blocking)
	RxNoSession    uint64 // shim frames before the neighbour's first sync: numbered ones passed as unprotected
	RxBytes        int    // reordering buffer bytes now; never above Config.RxBuffer
	RxBytesMax     int    // high-water mark of RxBytes
	RxBufferFull   uint64 // out-of-order frames dropped for want of buffer room (asked for again)
	// The longest head-of-line wait (Blocking): how long ackNo stood
	// still while the reordering buffer held frames behind it, as the
	// stage saw it (from its first poll that found frames held to the
	// first that found ackNo moved), and what that wait was: the notice
	// retries sent during it (its notice, or every copy, was lost), how
	// long of it the head itself was held but not released (frame memory
	// or the batch full), and whether ackNoTimeout ended it. A wait of
	// one round trip is a retransmission that came at once; the
	// reordering buffer grows at the link's rate for as long as it lasts.
	HeadWaitMax        int64  // ns
	HeadWaitRetries    uint64 // notice retries during it
	HeadWaitPresent    int64  // ns of it the head was held, not released
	HeadWaitSkipped    uint64 // 1 if ackNoTimeout ended it
	HeadWaitRxBytesMax int    // the reordering buffer's peak during it
	PauseSent          uint64 // PFC pause frames sent to the neighbour (Algorithm 2), refreshes included
	ResumeSent         uint64 // PFC resume frames sent
	Acks               uint64 // explicit ACKs sent from the idle queue (§3.1)
	AcksControl        uint64 // explicit ACKs sent on the control queue: the ACK was stale for DummyInterval, nothing carried it
	AcksCarried        uint64 // frames that left carrying the ACK (piggybacked, explicit or on a dummy)
	DummiesReceived    uint64 // dummies from the neighbour
	AcksReceived       uint64 // explicit ACKs from the neighbour
	NoFrame            uint64 // frames llr could not build or release: frame memory exhausted
	TimerFull          uint64 // timers the worker refused
}

// Stats are the counters of one Stage, per worker port index.
type Stats struct {
	Ports [MaxPorts]PortStats
}

// Lost returns the sequences the link lost: those found missing.
func (p *PortStats) Lost() uint64 { return p.LossesDetected }

// Sent returns the sequences the neighbour sent on the link since the
// receiver started.
func (p *PortStats) Sent() uint64 { return p.Expected }

// MeasuredLoss is the link's loss rate as the receiver measures it over
// the stage's life: Lost over Sent.
func (p *PortStats) MeasuredLoss() float64 {
	if p.Sent() == 0 {
		return 0
	}
	return float64(p.Lost()) / float64(p.Sent())
}

// EffectiveLoss is the loss rate left after recovery: sequences skipped
// by ackNoTimeout over Sent.
func (p *PortStats) EffectiveLoss() float64 {
	if p.Sent() == 0 {
		return 0
	}
	return float64(p.Skipped) / float64(p.Sent())
}

// Add adds q's counters to p's (gauges too: the collector sums workers).
func (p *PortStats) Add(q *PortStats) {
	p.Protected += q.Protected
	p.ShimBytes += q.ShimBytes
	p.UnprotectedQueue += q.UnprotectedQueue
	p.UnprotectedTooBig += q.UnprotectedTooBig
	p.UnprotectedNoRoom += q.UnprotectedNoRoom
	p.UnprotectedTxFull += q.UnprotectedTxFull
	p.UnprotectedShim += q.UnprotectedShim
	p.UnprotectedOff += q.UnprotectedOff
	p.UnprotectedSync += q.UnprotectedSync
	p.TxBytes += q.TxBytes
	p.TxBytesMax += q.TxBytesMax
	p.TxFrames += q.TxFrames
	p.TxHeld += q.TxHeld
	p.TxCopied += q.TxCopied
	p.NoticesReceived += q.NoticesReceived
	p.NoticesStale += q.NoticesStale
	p.LossesNotified += q.LossesNotified
	p.RequestsDropped += q.RequestsDropped
	p.Retransmitted += q.Retransmitted
	p.Copies += q.Copies
	p.RetxRefused += q.RetxRefused
	p.RetxLimited += q.RetxLimited
	p.Dummies += q.Dummies
	p.Resyncs += q.Resyncs
	p.SyncsSent += q.SyncsSent
	p.Sessions += q.Sessions
	p.SyncsReceived += q.SyncsReceived
	p.ResyncDropped += q.ResyncDropped
	p.RxNoSession += q.RxNoSession
	p.Watched += q.Watched
	p.ProtectAsked += q.ProtectAsked
	p.ProtectRequests += q.ProtectRequests
	p.Activations += q.Activations
	p.ProtectIgnored += q.ProtectIgnored
	p.RxProtected += q.RxProtected
	p.RxUnprotected += q.RxUnprotected
	p.RxWatched += q.RxWatched
	p.RxMalformed += q.RxMalformed
	p.RxConsumed += q.RxConsumed
	p.Delivered += q.Delivered
	p.Held += q.Held
	p.Released += q.Released
	p.Duplicates += q.Duplicates
	p.Expected += q.Expected
	p.LossesDetected += q.LossesDetected
	p.HolesMerged += q.HolesMerged
	p.NoticesSent += q.NoticesSent
	p.NoticeRetries += q.NoticeRetries
	p.AckTimeouts += q.AckTimeouts
	p.Skipped += q.Skipped
	p.RxBytes += q.RxBytes
	p.RxBytesMax += q.RxBytesMax
	p.RxBufferFull += q.RxBufferFull
	p.HeadWaitMax += q.HeadWaitMax
	p.HeadWaitRetries += q.HeadWaitRetries
	p.HeadWaitPresent += q.HeadWaitPresent
	p.HeadWaitSkipped += q.HeadWaitSkipped
	p.HeadWaitRxBytesMax += q.HeadWaitRxBytesMax
	p.PauseSent += q.PauseSent
	p.ResumeSent += q.ResumeSent
	p.Acks += q.Acks
	p.AcksControl += q.AcksControl
	p.AcksCarried += q.AcksCarried
	p.DummiesReceived += q.DummiesReceived
	p.AcksReceived += q.AcksReceived
	p.NoFrame += q.NoFrame
	p.TimerFull += q.TimerFull
}
