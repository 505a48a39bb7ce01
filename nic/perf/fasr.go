package perf

import "rocetor/nic/fasr"

// FaSRCounters are a FaSR endpoint's counters (nic/fasr.Stats), its
// fast-path ratio and its memory: the per-QP context and the shared SR
// pool, which is the same whatever the number of QPs.
type FaSRCounters struct {
	Recoveries      uint64  `json:"recoveries"`         // receiver: loss recoveries started with an SR state unit
	FastEntries     uint64  `json:"fast_entries"`       // receiver: recoveries on the fast path (started with lost-cnt 1, or back to it)
	SlowEntries     uint64  `json:"slow_entries"`       // receiver: recoveries on the slow path (bitmap)
	FNACKsSent      uint64  `json:"fnacks_sent"`        // receiver: retransmissions past RCV-NXT discarded and reported
	Duplicates      uint64  `json:"duplicates"`         // receiver: packets that had arrived before
	LostOverflows   uint64  `json:"lost_overflows"`     // receiver: lost-cnt overflowed its 3 bits
	GBNFallbacks    uint64  `json:"gbn_fallbacks"`      // receiver: recoveries that went Go-Back-N (pool exhausted, early READ)
	ReadFallbacks   uint64  `json:"read_fallbacks"`     // receiver: of those, for a READ ahead of RCV-NXT
	SACKs           uint64  `json:"sacks"`              // sender: ACKs with a SACK past the cumulative ACK
	LostGaps        uint64  `json:"lost_gaps"`          // sender: SACK gaps judged data loss (lost-cnt grew): resent
	SACKLossGaps    uint64  `json:"sack_loss_gaps"`     // sender: SACK gaps judged SACK loss (lost-cnt did not grow)
	FNACKsReceived  uint64  `json:"fnacks_received"`    // sender: FNACKs received
	FNACKRestarts   uint64  `json:"fnack_restarts"`     // sender: of those acted on (once per new ACK)
	GBNRewinds      uint64  `json:"gbn_rewinds"`        // sender: Go-Back-N NAKs acted on
	TxGBNFallbacks  uint64  `json:"tx_gbn_fallbacks"`   // sender: recoveries without a unit or bitmap: Go-Back-N
	Timeouts0       uint64  `json:"timeouts_lost0"`     // sender: expiries with lost-cnt 0 (resend from UNACK)
	Timeouts1       uint64  `json:"timeouts_lost1"`     // sender: expiries with lost-cnt 1 (UNACK only)
	TimeoutsN       uint64  `json:"timeouts_lostn"`     // sender: expiries with lost-cnt > 1 (UNACK and the bitmap's zeros)
	SACKRetransmits uint64  `json:"sack_retransmits"`   // sender: packets resent for a SACK
	RestartResends  uint64  `json:"restart_resends"`    // sender: packets resent after an expiry or FNACK
	GBNResends      uint64  `json:"gbn_resends"`        // sender: packets resent Go-Back-N
	FastOps         uint64  `json:"fast_ops"`           // SR operations on the fast path
	SlowOps         uint64  `json:"slow_ops"`           // SR operations on the slow path
	FastPathRatio   float64 `json:"fast_path_ratio"`    // fast_ops / (fast_ops + slow_ops): the seed's Fig. 9(b)
	Compressions    uint64  `json:"compressions"`       // slow-path bitmaps started with a compression-cnt
	UnitsExhausted  uint64  `json:"units_exhausted"`    // SR state units asked for when none was free
	BlocksExhausted uint64  `json:"blocks_exhausted"`   // bitmap blocks asked for when too few were free
	PeakUnits       uint64  `json:"peak_units"`         // most units in use at once
	PeakBlocks      uint64  `json:"peak_blocks"`        // most blocks in use at once
	Units           int     `json:"units"`              // units in the pool
	Blocks          int     `json:"blocks"`             // 16-bit bitmap blocks in the pool
	StateBytes      int     `json:"state_bytes_per_qp"` // FaSR's per-QP context (in qp_context_bytes)
	SharedBytes     int     `json:"shared_pool_bytes"`  // the endpoint's shared SR pool, whatever the QPs
}

// fasrCountersOf reads a stopped FaSR endpoint's counters.
func fasrCountersOf(t *fasr.Transport) *FaSRCounters {
	st, cfg := t.Stats(), t.Config()
	return &FaSRCounters{Recoveries: st.Recoveries, FastEntries: st.FastEntries, SlowEntries: st.SlowEntries,
		FNACKsSent: st.FNACKsSent, Duplicates: st.Duplicates, LostOverflows: st.LostOverflows,
		GBNFallbacks: st.GBNFallbacks, ReadFallbacks: st.ReadFallbacks,
		SACKs: st.SACKs, LostGaps: st.LostGaps, SACKLossGaps: st.SACKLossGaps, FNACKsReceived: st.FNACKsRecv,
		FNACKRestarts: st.FNACKRestarts, GBNRewinds: st.GBNRewinds, TxGBNFallbacks: st.TxGBNFallbacks,
		Timeouts0: st.Timeouts0, Timeouts1: st.Timeouts1, TimeoutsN: st.TimeoutsN,
		SACKRetransmits: st.SACKRetransmits, RestartResends: st.RestartResends, GBNResends: st.GBNResends,
		FastOps: st.FastOps, SlowOps: st.SlowOps, FastPathRatio: st.FastPathRatio(), Compressions: st.Compressions,
		UnitsExhausted: st.UnitsExhausted, BlocksExhausted: st.BlocksExhausted, PeakUnits: st.PeakUnits,
		PeakBlocks: st.PeakBlocks, Units: cfg.Units, Blocks: cfg.Blocks, StateBytes: t.StateBytes(),
		SharedBytes: t.SharedBytes()}
}
