package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"rocetor/dataplane"
)

// stormAlertEvery is how often tord reads the workers' PFC watchdog
// counters for its alerts: the workers publish them about once a
// millisecond, and a storm lasts at least the detection time.
const stormAlertEvery = 100 * time.Millisecond

// stormAlerts logs, on the control path, each pause storm the PFC
// watchdog declares and each restoration (the workers only count them,
// PortCounters.WDStorms and WDRestores), until ctx is done. An operator
// alerts on the log line or on rocetor_port_pfc_watchdog_storms_total.
func stormAlerts(ctx context.Context, log *zap.Logger, ports []string, workers []*dataplane.Worker, every time.Duration) {
	storms, restores := make([]uint64, len(ports)), make([]uint64, len(ports))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, name := range ports {
			var s, r, drops uint64
			for _, w := range workers {
				if p := w.Snapshot().Ports; i < len(p) {
					s, r, drops = s+p[i].WDStorms, r+p[i].WDRestores, drops+p[i].WDDrops
				}
			}
			if s > storms[i] {
				log.Warn("pfc watchdog: pause storm detected, the port's pauses are ignored", zap.String("port", name),
					zap.Uint64("storms", s-storms[i]), zap.Uint64("storms_total", s), zap.Uint64("dropped_total", drops))
			}
			if r > restores[i] {
				log.Info("pfc watchdog: stormed queue restored, the port's pauses are honoured again", zap.String("port", name),
					zap.Uint64("restored", r-restores[i]), zap.Uint64("restored_total", r))
			}
			storms[i], restores[i] = s, r
		}
	}
}
