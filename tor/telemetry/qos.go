package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/pipeline"
)

// qosCollector exports the qos section's traffic classes: which queue
// of each port carries each class, how it is scheduled and whether it
// is lossless. The queues' own series (rocetor_queue_*{port, queue})
// are then the classes' series, joined on queue:
//
//	rocetor_queue_dequeued_bytes_total * on(port, queue) group_left(traffic_class) rocetor_qos_queue_info
type qosCollector struct {
	ports   []string
	classes []pipeline.QueueClass
}

// NewQoS returns the collector of rocetor_qos_queue_info for a switch
// whose queues carry classes (pipeline.Config.QueueClasses); ports
// names the switch's ports in order.
func NewQoS(ports []string, classes []pipeline.QueueClass) prometheus.Collector {
	return &qosCollector{ports: ports, classes: classes}
}

var dQoSQueue = prometheus.NewDesc("rocetor_qos_queue_info",
	"1 for each traffic class of the qos section and the egress queue that carries it on the port: "+
		"scheduler strict or dwrr, the DWRR weight (0 for strict), and the PFC priority that pauses the queue (-1: lossy).",
	[]string{"port", "queue", "traffic_class", "scheduler", "weight", "pfc_priority"}, nil)

func (c *qosCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dQoSQueue }

func (c *qosCollector) Collect(ch chan<- prometheus.Metric) {
	for _, port := range c.ports {
		for _, q := range c.classes {
			for _, tc := range q.Classes {
				ch <- prometheus.MustNewConstMetric(dQoSQueue, prometheus.GaugeValue, 1, port, q.Queue,
					strconv.Itoa(tc), q.Scheduler, strconv.Itoa(q.Weight), strconv.Itoa(q.PFC))
			}
		}
	}
}
