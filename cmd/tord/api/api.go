package api

import "rocetor/tor/llr"

// Status is GET /api/v1/status.
type Status struct {
	Version       string   `json:"version"`
	UptimeSeconds float64  `json:"uptime_seconds"`
	Ports         []string `json:"ports"`
	Workers       int      `json:"workers"`
	Poll          string   `json:"poll"`
	Stages        []string `json:"stages"`
	LogLevel      string   `json:"log_level"`
	ConfigFile    string   `json:"config_file,omitempty"`
}

// Port is one port of GET /api/v1/ports, summed over the workers.
type Port struct {
	Name      string `json:"name"`
	Index     int    `json:"index"`
	XDPMode   string `json:"xdp_mode"`
	ZeroCopy  bool   `json:"zero_copy"`
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	PFCRx     uint64 `json:"pfc_rx"`
	PFCTx     uint64 `json:"pfc_tx"`
	// PFCWatchdogStorms and PFCWatchdogRestores count the pause storms
	// the PFC watchdog declared on the port and the restorations
	// (pfc.watchdog); their difference is the priorities stormed now.
	PFCWatchdogStorms   uint64 `json:"pfc_watchdog_storms,omitempty"`
	PFCWatchdogRestores uint64 `json:"pfc_watchdog_restores,omitempty"`
	RxDropped           uint64 `json:"rx_ring_dropped"` // the kernel found no room in the rx ring
	TxRefused           uint64 `json:"tx_refused"`
}

// Queue is one egress queue of GET /api/v1/queues, summed over the workers.
type Queue struct {
	Port          string `json:"port"`
	Queue         string `json:"queue"`
	DepthBytes    int    `json:"depth_bytes"`
	DepthPackets  int    `json:"depth_packets"`
	LimitBytes    int    `json:"limit_bytes"`
	MaxDepthBytes int    `json:"max_depth_bytes"`
	Paused        bool   `json:"paused"`
	Enqueued      uint64 `json:"enqueued"`
	Dequeued      uint64 `json:"dequeued"`
	Drops         uint64 `json:"drops"`
	// ECT counts the ECN-capable frames that passed the marking point,
	// Marked those this queue marked CE.
	ECT    uint64 `json:"ect_packets"`
	Marked uint64 `json:"ce_marked"`
	// ECN is the queue's marking profile; absent when it marks nothing.
	ECN *QueueECN `json:"ecn,omitempty"`
	// QoS is the queue's traffic classes (the qos section); absent
	// for a queue no class maps to, and without a qos section.
	QoS *QueueQoS `json:"qos,omitempty"`
}

// QueueQoS is what the qos section makes of a queue: the traffic
// classes and DSCPs it carries and how it is scheduled.
type QueueQoS struct {
	TrafficClasses []int  `json:"traffic_classes"`
	DSCPs          []int  `json:"dscps"`
	Scheduler      string `json:"scheduler"` // strict or dwrr
	Weight         int    `json:"weight"`    // DWRR weight; 0 for strict
	PFCPriority    int    `json:"pfc_priority"`
}

// QueueECN is a queue's ECN marking profile (DCQCN's Kmin, Kmax, Pmax),
// for the whole switch: the thresholds are summed over the workers,
// each of which marks its share of the port.
type QueueECN struct {
	Mark               string  `json:"mark"` // dequeue or enqueue
	MinThresholdBytes  int     `json:"min_threshold_bytes"`
	MaxThresholdBytes  int     `json:"max_threshold_bytes"`
	ProbabilityPercent float64 `json:"probability_percent"`
}

// Worker is one worker of GET /api/v1/workers.
type Worker struct {
	Worker     int     `json:"worker"`
	BusyPolls  uint64  `json:"busy_polls"`
	IdlePolls  uint64  `json:"idle_polls"`
	Sleeps     uint64  `json:"sleeps"`
	BusyRatio  float64 `json:"busy_ratio"` // loops that moved something over all loops
	FramesUsed int     `json:"frames_in_use"`
	Frames     int     `json:"frames"`
	Timers     int     `json:"timers"`
	// Batches counts received batches by size: bucket k holds 2^k to
	// 2^(k+1)−1 packets.
	Batches []uint64 `json:"batches"`
}

// Stage is one pipeline stage of GET /api/v1/stages, summed over the workers.
type Stage struct {
	Name      string  `json:"name"`
	Calls     uint64  `json:"calls"`
	Packets   uint64  `json:"packets"`
	MeanBatch float64 `json:"mean_batch"`
	// Ports says, for stages that can be switched per port (trim,
	// impair), whether each port has the stage on.
	Ports map[string]bool `json:"ports,omitempty"`
}

// Params are the parameters safe to change while tord runs.
type Params struct {
	LogLevel string `json:"log_level"`
}

// Reload is what a reload did.
type Reload struct {
	Applied []string `json:"applied"` // fields that changed and took effect
}

// Flow is one busy flow as the admin API shows it.
type Flow struct {
	Worker    int    `json:"worker"`
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	QP        uint32 `json:"qp"`
	State     string `json:"state"`
	Port      string `json:"port"` // the host port its packets leave by
	EPSN      uint32 `json:"epsn"`
	Held      int    `json:"held_packets"`
	HeldBytes int    `json:"held_bytes"`
	Requests  int    `json:"requests"` // sent for the current ePSN
}

// LLRPort is one protected port as GET /api/v1/llr shows it.
type LLRPort struct {
	Port          string  `json:"port"`
	Active        bool    `json:"active"`
	Pinned        bool    `json:"pinned"` // an operator's override holds the sender
	Mode          string  `json:"mode"`
	Protected     uint64  `json:"protected_packets"`
	Watched       uint64  `json:"watched_packets"`
	Copies        uint64  `json:"copies"`
	Retransmitted uint64  `json:"retransmitted"`
	MeasuredLoss  float64 `json:"measured_loss"`  // incoming, over tord's life
	EffectiveLoss float64 `json:"effective_loss"` // incoming, left after recovery
	NeighbourLoss float64 `json:"neighbour_loss"` // outgoing, as the neighbour's monitor reported it
	// Monitor is the corruption monitor's view of the incoming link.
	Monitor *llr.MonitorStatus `json:"monitor,omitempty"`
}

// Error is the body of every answer other than 200.
type Error struct {
	Error string `json:"error"`
}
