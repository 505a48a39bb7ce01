package metrics

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"rocetor/dataplane"
)

// Source is anything that yields a worker snapshot; *dataplane.Worker is one.
type Source interface {
	Snapshot() dataplane.Snapshot
}

// Collector is a prometheus.Collector over a fixed set of workers whose
// ports are named by portNames (the same order in every worker) and whose
// stages are named by stageNames.
type Collector struct {
	sources    []Source
	portNames  []string
	stageNames []string
}

// New returns a collector for the given workers.
func New(portNames, stageNames []string, sources ...Source) *Collector {
	return &Collector{sources: sources, portNames: portNames, stageNames: stageNames}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("rocetor_"+name, help, labels, nil)
}

// Metric descriptions; docs/operations.md's metrics reference is generated
// from this table (see Descs).
var (
	dRxPackets   = desc("port_rx_packets_total", "Frames received on the port.", "port")
	dRxBytes     = desc("port_rx_bytes_total", "Bytes received on the port.", "port")
	dTxPackets   = desc("port_tx_packets_total", "Frames transmitted on the port.", "port")
	dTxBytes     = desc("port_tx_bytes_total", "Bytes transmitted on the port.", "port")
	dPFCRx       = desc("port_pfc_rx_frames_total", "802.1Qbb PFC frames received on the port.", "port")
	dPauseRx     = desc("port_pause_rx_frames_total", "802.3x PAUSE frames received on the port.", "port")
	dPFCRefused  = desc("port_pfc_refused_frames_total", "PFC and PAUSE frames received on a port that does not honour them (trust.pfc_ports), dropped as trust_pfc: they paused nothing.", "port")
	dPFCTx       = desc("port_pfc_tx_frames_total", "802.1Qbb PFC frames the switch sent on the port.", "port")
	dPFCRxPrio   = desc("port_pfc_rx_priority_frames_total", "802.1Qbb PFC frames received on the port that name the priority (pause or resume).", "port", "priority")
	dPFCTxPrio   = desc("port_pfc_tx_priority_frames_total", "802.1Qbb PFC frames the switch sent on the port that name the priority (pause or resume).", "port", "priority")
	dWDStorms    = desc("port_pfc_watchdog_storms_total", "PFC watchdog (pfc.watchdog): pause storms declared on the port's queues, a priority paused by the peer with frames waiting and none sent for the detection time.", "port")
	dWDRestores  = desc("port_pfc_watchdog_restores_total", "PFC watchdog (pfc.watchdog): stormed priorities restored after the restoration time passed without a pause.", "port")
	dWDStormed   = desc("port_pfc_watchdog_stormed", "PFC watchdog (pfc.watchdog): priorities of the port stormed now, whose pauses the switch ignores.", "port")
	dWDDrops     = desc("port_pfc_watchdog_drops_total", "PFC watchdog (pfc.watchdog, action drop): frames of stormed queues dropped, also counted as drop reason pfc_watchdog.", "port")
	dXDPDrop     = desc("port_xdp_rx_dropped_total", "Frames the kernel dropped for want of AF_XDP rx ring or fill ring room (XDP_STATISTICS rx_dropped).", "port")
	dXDPInvalid  = desc("port_xdp_invalid_descs_total", "Invalid AF_XDP descriptors (XDP_STATISTICS), by direction.", "port", "direction")
	dXDPRingFull = desc("port_xdp_rx_ring_full_total", "Times the AF_XDP rx ring was full (XDP_STATISTICS rx_ring_full).", "port")
	dXDPFillEmp  = desc("port_xdp_fill_ring_empty_total", "Times the AF_XDP fill ring was empty (XDP_STATISTICS rx_fill_ring_empty_descs).", "port")
	dXDPTxEmpty  = desc("port_xdp_tx_ring_empty_total", "Times the AF_XDP tx ring was empty (XDP_STATISTICS tx_ring_empty_descs).", "port")
	dWakeups     = desc("port_wakeups_total", "Wakeup syscalls issued for the port's socket.", "port")
	dTxRefused   = desc("port_tx_refused_total", "Frames the port refused for want of tx ring room.", "port")
	dDepthBytes  = desc("queue_depth_bytes", "Bytes waiting in the egress queue.", "port", "queue")
	dDepthPkts   = desc("queue_depth_packets", "Frames waiting in the egress queue.", "port", "queue")
	dLimitBytes  = desc("queue_limit_bytes", "Byte budget of the egress queue.", "port", "queue")
	dMaxDepth    = desc("queue_max_depth_bytes", "Highest depth the egress queue reached.", "port", "queue")
	dPaused      = desc("queue_paused", "1 while a received PFC frame pauses the queue.", "port", "queue")
	dEnq         = desc("queue_enqueued_packets_total", "Frames accepted by the egress queue.", "port", "queue")
	dDeq         = desc("queue_dequeued_bytes_total", "Bytes the scheduler released from the egress queue.", "port", "queue")
	dDeqPkts     = desc("queue_dequeued_packets_total", "Frames the scheduler released from the egress queue.", "port", "queue")
	dQDrops      = desc("queue_drops_total", "Frames refused at the egress queue's byte budget.", "port", "queue")
	dECT         = desc("queue_ect_packets_total", "ECN-capable frames (ECT(0), ECT(1) or CE) that passed the egress queue's marking point.", "port", "queue")
	dMarked      = desc("queue_ce_marked_total", "Frames the egress queue marked Congestion Experienced (DCQCN's congestion point).", "port", "queue")
	dECNMin      = desc("queue_ecn_min_threshold_bytes", "ECN marking profile: depth up to which nothing is marked (Kmin); 0 with marking off.", "port", "queue")
	dECNMax      = desc("queue_ecn_max_threshold_bytes", "ECN marking profile: depth beyond which every ECN-capable frame is marked (Kmax); 0 with marking off.", "port", "queue")
	dECNPMax     = desc("queue_ecn_max_probability_ratio", "ECN marking profile: marking probability at the max threshold (Pmax).", "port", "queue")
	dThreshold   = desc("queue_threshold_bytes", "Shared buffer (buffer:): the most bytes the egress queue may hold now, its reserve, the port reserve it holds or could take, and alpha times the pool's free bytes; only with a shared buffer.", "port", "queue")
	dQThDrops    = desc("queue_threshold_drops_total", "Shared buffer (buffer:): frames the egress queue refused at its dynamic threshold, among rocetor_queue_drops_total; only with a shared buffer.", "port", "queue")
	dSharedUsed  = desc("buffer_shared_used_bytes", "Shared buffer (buffer:): bytes the egress queues hold beyond their reserves, switch-wide; only with a shared buffer.")
	dReserve     = desc("buffer_port_reserve_bytes", "Shared buffer (buffer:): the port's reserve (buffer.port_reserve), bytes its queues share beyond their own reserves before the pool; only with a shared buffer.", "port")
	dReserveUsed = desc("buffer_port_reserve_used_bytes", "Shared buffer (buffer:): bytes the port's egress queues hold of the port's reserve; only with a shared buffer.", "port")
	dSharedSize  = desc("buffer_shared_size_bytes", "Shared buffer (buffer:): the pool the queues share beyond their reserves (buffer.size less every queue's and port's reserve); only with a shared buffer.")
	dDrops       = desc("drops_total", "Frames dropped, by reason.", "reason")
	dBusy        = desc("worker_busy_polls_total", "Worker loops that moved frames or fired timers.", "worker")
	dIdle        = desc("worker_idle_polls_total", "Worker loops that found nothing to do.", "worker")
	dSleeps      = desc("worker_sleeps_total", "Times the worker slept in poll(2).", "worker")
	dYields      = desc("worker_yields_total", "Idle loops in which a busy-polling worker yielded its CPU (sched_yield).", "worker")
	dOnCPU       = desc("worker_cpu_seconds_total", "Time the worker's thread ran on a CPU (the kernel's schedstat).", "worker")
	dRunDelay    = desc("worker_run_delay_seconds_total", "Time the worker's thread waited for a CPU while runnable (the kernel's schedstat): a switch's queues are neither served nor marked meanwhile.", "worker")
	dHanded      = desc("worker_handed_total", "Frames the worker handed to the worker that owns their flow or port (handoff rings; with netrt, trim or llr and more than one worker).", "worker", "to")
	dBatch       = desc("worker_batch_size", "Frames per received batch.", "worker")
	dTimers      = desc("worker_timers", "Timers armed by the worker's stages.", "worker")
	dTimerFull   = desc("worker_timers_refused_total", "Timers refused because the worker's timer heap was full.", "worker")
	dFramesUse   = desc("worker_frames_in_use", "Frames of the worker's frame memory in use.", "worker")
	dFramesShare = desc("worker_frames_shared", "Holders that frames in use have besides their owners, all frames together: llr's Tx buffer or NetRT's pool keeping a frame still queued or being sent.", "worker")
	dFrames      = desc("worker_frames", "Frames of the worker's frame memory.", "worker")
	dStageCalls  = desc("stage_calls_total", "Batches handed to the stage.", "stage")
	dStagePkts   = desc("stage_packets_total", "Frames handed to the stage.", "stage")
)

var prioNames = [8]string{"0", "1", "2", "3", "4", "5", "6", "7"}

// Descs lists every metric the collector exports, for the metrics reference.
func Descs() []*prometheus.Desc {
	return []*prometheus.Desc{dRxPackets, dRxBytes, dTxPackets, dTxBytes, dPFCRx, dPauseRx, dPFCRefused, dPFCTx,
		dPFCRxPrio, dPFCTxPrio, dWDStorms, dWDRestores, dWDStormed, dWDDrops,
		dXDPDrop, dXDPInvalid, dXDPRingFull, dXDPFillEmp, dXDPTxEmpty, dWakeups, dTxRefused,
		dDepthBytes, dDepthPkts, dLimitBytes, dMaxDepth, dPaused, dEnq, dDeq, dDeqPkts, dQDrops,
		dECT, dMarked, dECNMin, dECNMax, dECNPMax, dThreshold, dQThDrops, dSharedUsed, dSharedSize, dReserve, dReserveUsed, dDrops,
		dBusy, dIdle, dSleeps, dYields, dOnCPU, dRunDelay, dHanded, dBatch, dTimers, dTimerFull, dFramesUse, dFramesShare, dFrames, dStageCalls, dStagePkts}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range Descs() {
		ch <- d
	}
}

type queueKey struct{ port, queue int }

// Collect implements prometheus.Collector: it sums every worker's snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	np := len(c.portNames)
	ports := make([]dataplane.PortCounters, np)
	pstats := make([]dataplane.PortStats, np)
	reserves := make([]dataplane.ReserveSnapshot, np) // the workers' shares summed
	queues := map[queueKey]*dataplane.QueueSnapshot{}
	var qorder []queueKey
	stages := make([]dataplane.StageCounters, len(c.stageNames))
	var drops [dataplane.MaxReasons]uint64
	var sharedUsed, sharedSize int64 // one pool per switch: every worker reports it
	for _, src := range c.sources {
		s := src.Snapshot()
		w := strconv.Itoa(s.Worker)
		for i := 0; i < np && i < len(s.Ports); i++ {
			a, b := &ports[i], s.Ports[i]
			a.RxPackets += b.RxPackets
			a.RxBytes += b.RxBytes
			a.TxPackets += b.TxPackets
			a.TxBytes += b.TxBytes
			a.PFCRx += b.PFCRx
			a.PauseRx += b.PauseRx
			a.PFCRefused += b.PFCRefused
			a.PFCTx += b.PFCTx
			for k := range a.PFCRxPrio {
				a.PFCRxPrio[k] += b.PFCRxPrio[k]
				a.PFCTxPrio[k] += b.PFCTxPrio[k]
			}
			a.WDStorms += b.WDStorms
			a.WDRestores += b.WDRestores
			a.WDDrops += b.WDDrops
			ps, qs := &pstats[i], s.PortStats[i]
			ps.RxDropped += qs.RxDropped
			ps.RxInvalid += qs.RxInvalid
			ps.TxInvalid += qs.TxInvalid
			ps.RxRingFull += qs.RxRingFull
			ps.FillEmpty += qs.FillEmpty
			ps.TxRingEmpty += qs.TxRingEmpty
			ps.Wakeups += qs.Wakeups
			ps.TxRefused += qs.TxRefused
			if i < len(s.Reserves) {
				reserves[i].Size += s.Reserves[i].Size
				reserves[i].Held += s.Reserves[i].Held
			}
			for q, qs := range s.Queues[i] {
				k := queueKey{i, q}
				a := queues[k]
				if a == nil {
					a = &dataplane.QueueSnapshot{Name: qs.Name}
					queues[k] = a
					qorder = append(qorder, k)
				}
				a.DepthBytes += qs.DepthBytes
				a.DepthPackets += qs.DepthPackets
				a.LimitBytes += qs.LimitBytes
				a.ThresholdBytes += qs.ThresholdBytes
				a.ThresholdDrops += qs.ThresholdDrops
				a.MaxDepthBytes = max(a.MaxDepthBytes, qs.MaxDepthBytes)
				a.Paused = a.Paused || qs.Paused
				a.Enqueued += qs.Enqueued
				a.Dequeued += qs.Dequeued
				a.Bytes += qs.Bytes
				a.Drops += qs.Drops
				a.ECT += qs.ECT
				a.Marked += qs.Marked
				// Each worker marks its share of the port at
				// its share of the thresholds: they add up.
				a.ECN.MinBytes += qs.ECN.MinBytes
				a.ECN.MaxBytes += qs.ECN.MaxBytes
				a.ECN.PMax = max(a.ECN.PMax, qs.ECN.PMax)
			}
		}
		for i := range stages {
			if i < len(s.Stages) {
				stages[i].Calls += s.Stages[i].Calls
				stages[i].Packets += s.Stages[i].Packets
			}
		}
		if s.SharedSize > 0 {
			sharedUsed, sharedSize = s.SharedUsed, s.SharedSize
		}
		for r, n := range s.Drops {
			drops[r] += n
		}
		counter(ch, dBusy, s.BusyPolls, w)
		counter(ch, dIdle, s.IdlePolls, w)
		counter(ch, dSleeps, s.Sleeps, w)
		counter(ch, dYields, s.Yields, w)
		if on, wait, ok := schedstat(s.TID); ok {
			ch <- prometheus.MustNewConstMetric(dOnCPU, prometheus.CounterValue, float64(on)/1e9, w)
			ch <- prometheus.MustNewConstMetric(dRunDelay, prometheus.CounterValue, float64(wait)/1e9, w)
		}
		for to, n := range s.Handed {
			if to != s.Worker {
				counter(ch, dHanded, n, w, strconv.Itoa(to))
			}
		}
		gauge(ch, dTimers, float64(s.Timers), w)
		counter(ch, dTimerFull, s.TimerFull, w)
		gauge(ch, dFramesUse, float64(s.FramesUse), w)
		gauge(ch, dFramesShare, float64(s.FramesShared), w)
		gauge(ch, dFrames, float64(s.Frames), w)
		ch <- batchHistogram(s.Batches, w)
	}
	for i, name := range c.portNames {
		p, s := ports[i], pstats[i]
		counter(ch, dRxPackets, p.RxPackets, name)
		counter(ch, dRxBytes, p.RxBytes, name)
		counter(ch, dTxPackets, p.TxPackets, name)
		counter(ch, dTxBytes, p.TxBytes, name)
		counter(ch, dPFCRx, p.PFCRx, name)
		counter(ch, dPauseRx, p.PauseRx, name)
		counter(ch, dPFCRefused, p.PFCRefused, name)
		counter(ch, dPFCTx, p.PFCTx, name)
		for k := range p.PFCRxPrio {
			counter(ch, dPFCRxPrio, p.PFCRxPrio[k], name, prioNames[k])
			counter(ch, dPFCTxPrio, p.PFCTxPrio[k], name, prioNames[k])
		}
		counter(ch, dWDStorms, p.WDStorms, name)
		counter(ch, dWDRestores, p.WDRestores, name)
		gauge(ch, dWDStormed, float64(p.WDStorms-p.WDRestores), name)
		counter(ch, dWDDrops, p.WDDrops, name)
		counter(ch, dXDPDrop, s.RxDropped, name)
		counter(ch, dXDPInvalid, s.RxInvalid, name, "rx")
		counter(ch, dXDPInvalid, s.TxInvalid, name, "tx")
		counter(ch, dXDPRingFull, s.RxRingFull, name)
		counter(ch, dXDPFillEmp, s.FillEmpty, name)
		counter(ch, dXDPTxEmpty, s.TxRingEmpty, name)
		counter(ch, dWakeups, s.Wakeups, name)
		counter(ch, dTxRefused, s.TxRefused, name)
	}
	for _, k := range qorder {
		q := queues[k]
		port := c.portNames[k.port]
		gauge(ch, dDepthBytes, float64(q.DepthBytes), port, q.Name)
		gauge(ch, dDepthPkts, float64(q.DepthPackets), port, q.Name)
		gauge(ch, dLimitBytes, float64(q.LimitBytes), port, q.Name)
		gauge(ch, dMaxDepth, float64(q.MaxDepthBytes), port, q.Name)
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		gauge(ch, dPaused, paused, port, q.Name)
		counter(ch, dEnq, q.Enqueued, port, q.Name)
		counter(ch, dDeq, q.Bytes, port, q.Name)
		counter(ch, dDeqPkts, q.Dequeued, port, q.Name)
		counter(ch, dQDrops, q.Drops, port, q.Name)
		counter(ch, dECT, q.ECT, port, q.Name)
		counter(ch, dMarked, q.Marked, port, q.Name)
		gauge(ch, dECNMin, float64(q.ECN.MinBytes), port, q.Name)
		gauge(ch, dECNMax, float64(q.ECN.MaxBytes), port, q.Name)
		gauge(ch, dECNPMax, q.ECN.PMax, port, q.Name)
		if sharedSize > 0 {
			// Each worker's share of a port's queue has its share
			// of the reserve and the whole α × free: they add up to
			// what the port's queue may hold.
			gauge(ch, dThreshold, float64(q.ThresholdBytes), port, q.Name)
			counter(ch, dQThDrops, q.ThresholdDrops, port, q.Name)
		}
	}
	if sharedSize > 0 {
		gauge(ch, dSharedUsed, float64(sharedUsed))
		gauge(ch, dSharedSize, float64(sharedSize))
		for i, name := range c.portNames {
			gauge(ch, dReserve, float64(reserves[i].Size), name)
			gauge(ch, dReserveUsed, float64(reserves[i].Held), name)
		}
	}
	for i, name := range c.stageNames {
		counter(ch, dStageCalls, stages[i].Calls, name)
		counter(ch, dStagePkts, stages[i].Packets, name)
	}
	for r := 0; r < dataplane.NumReasons(); r++ {
		counter(ch, dDrops, drops[r], dataplane.Reason(r).String())
	}
}

// schedstat reads the kernel's accounting of thread tid of this
// process: nanoseconds on a CPU and waiting for one
// (Documentation/scheduler/sched-stats.rst). ok is false before the
// worker runs and on kernels without schedstats.
func schedstat(tid int) (onCPU, wait uint64, ok bool) {
	if tid <= 0 {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, false
	}
	onCPU, err1 := strconv.ParseUint(f[0], 10, 64)
	wait, err2 := strconv.ParseUint(f[1], 10, 64)
	return onCPU, wait, err1 == nil && err2 == nil
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// batchHistogram turns the worker's power-of-two buckets into a
// Prometheus histogram with upper bounds 1, 3, 7, …, 63 and +Inf (64).
func batchHistogram(b [dataplane.HistBuckets]uint64, worker string) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum, count uint64
	var sum float64
	for k, n := range b {
		cum += n
		count += n
		lo := float64(uint(1) << k)
		hi := float64(uint(1)<<(k+1)) - 1
		if k == dataplane.HistBuckets-1 {
			hi = dataplane.BatchSize
		} else {
			buckets[hi] = cum
		}
		sum += float64(n) * (lo + hi) / 2 // bucket midpoint: the exact sum is not kept
	}
	return prometheus.MustNewConstHistogram(dBatch, count, sum, buckets, worker)
}
