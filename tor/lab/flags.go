package lab

import (
	"flag"
	"rocetor/dataplane"
)

// FabricFlags registers the flags that shape a testbed's switches. With
// impair, also --loss, --corrupt and --skew (experiments that sweep loss
// set it themselves).
func FabricFlags(fs *flag.FlagSet, o *Options, impair bool) {
	fs.StringVar(&o.Rate, "rate", o.Rate, "egress rate of every switch port, e.g. 1G, 100M (0: unshaped)")
	if impair {
		fs.Float64Var(&o.Loss, "loss", o.Loss, "loss probability of the fabric's frames (RoCEv2, link shim, PFC) at the impair sites (chain: core's link with tor2)")
		fs.Float64Var(&o.Corrupt, "corrupt", o.Corrupt, "FCS-corruption probability of the fabric's frames at the impair sites")
		fs.DurationVar(&o.Skew, "skew", o.Skew, "extra delay of the fabric's frames per impair site: site k (multipath: core k+1) delays k × skew")
	}
	fs.BoolVar(&o.OneWay, "one-way", o.OneWay, "loss and corruption only on the frames an impair site sends; by default what it receives on that port loses as much, recovery's requests, notices and ACKs included")
	fs.Float64Var(&o.Burst, "burst", o.Burst, "mean loss burst length in packets: Gilbert–Elliott loss at the --loss rate (0: independent losses)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the impairment's random decisions")
	fs.StringVar(&o.Multipath, "multipath", o.Multipath, "tord's multipath mode: ecmp, spray or adaptive")
	fs.BoolVar(&o.NetRT, "netrt", o.NetRT, "tor1 and tor2 run NetRT: in-network retransmission between the ToRs")
	fs.StringVar(&o.LLR, "llr", o.LLR, "link-local retransmission on every switch-to-switch link: off, nb or blocking")
	fs.BoolVar(&o.LLRMonitor, "llr-monitor", o.LLRMonitor, "with --llr: links start dormant and the corruption monitor turns protection on")
	fs.BoolVar(&o.Trust, "trust", o.Trust, "every switch's trust section names its host ports and honours PFC and PAUSE from switch ports only (docs/operations.md, Trust boundaries)")
	fs.BoolVar(&o.Trim, "trim", o.Trim, "every switch trims DCP data to header-only packets above --trim-threshold (DCP's lossless control plane)")
	fs.StringVar(&o.TrimThreshold, "trim-threshold", o.TrimThreshold, "data-queue depth above which DCP data is trimmed (default: tord's)")
	fs.IntVar(&o.IncastDegree, "incast-degree", o.IncastDegree, "incast degree N the control queue's WRR weight is set for (default: tord's)")
	fs.StringVar(&o.BottleneckRate, "bottleneck-rate", o.BottleneckRate, "egress rate of tor1's port toward the fabric (tor2 on the dumbbell and the link, core on the chain), where the senders' flows meet (empty: --rate)")
	fs.StringVar(&o.QueueLimit, "queue-limit", o.QueueLimit, "byte budget of every egress queue, e.g. 256KiB (empty: tord's, 1MiB)")
	fs.BoolVar(&o.ECN, "ecn", o.ECN, "every switch marks ECN on its data queues (DCQCN's congestion point; tord's ecn section)")
	fs.StringVar(&o.ECNMin, "ecn-min", o.ECNMin, "with --ecn: Kmin, the depth up to which nothing is marked (empty: tord's, 4 KB per Gbit/s of the port's rate, at least 5 KB)")
	fs.StringVar(&o.ECNMax, "ecn-max", o.ECNMax, "with --ecn: Kmax, the depth beyond which every ECN-capable packet is marked (empty: tord's, 16 KB per Gbit/s, at least 4 × Kmin)")
	fs.Float64Var(&o.ECNPMax, "ecn-pmax", o.ECNPMax, "with --ecn: Pmax, the marking probability at Kmax in percent (0: tord's, 20)")
	fs.BoolVar(&o.QoS, "qos", o.QoS, "every switch runs tord's default traffic classes (qos: {}): RoCE (DSCP 26) lossless, CNPs (48) strict, the rest lossy, each on its own queue")
	fs.StringVar(&o.Poll, "poll", o.Poll, "tord's worker polling: adaptive (right for a few cores), busy or interrupt")
	fs.StringVar(&o.TordCPU, "tord-cpu", o.TordCPU, "tord's workers' scheduling (tord's cpu section): fifo:PRIORITY or rr:PRIORITY (real time, with --poll interrupt), other:NICE; empty: the kernel's default")
	fs.IntVar(&o.Workers, "workers", o.Workers, "tord's workers on every switch; the veths between switches and the switch ends of the host links get as many queues (hosts keep one)")
	fs.BoolVar(&o.IPv6, "ipv6", o.IPv6, "IPv6 addresses and routes beside IPv4")
	fs.IntVar(&o.MetricsPort, "metrics-port", o.MetricsPort, "tord's /metrics port in each switch namespace, on loopback or with --mgmt the management address (pprof on the next, on loopback)")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "tord's log level")
	fs.Var(mgmtFlag{&o.Mgmt}, "mgmt", "a management network: a veth from the host to each switch, a /30 each out of "+DefaultMgmtNet.String()+
		" (--mgmt=NET/24 for another), tord's metrics on the switch's address there")
}

// validPoll says whether v is a roceperf --poll mode, or empty for
// roceperf's default.
func validPoll(v string) bool {
	if v == "" {
		return true
	}
	_, err := dataplane.ParsePollMode(v)
	return err == nil
}
