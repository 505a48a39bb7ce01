// Package impair makes a link lossy on purpose, so testbeds can
// reproduce the conditions the seed papers evaluate: random loss at one
// switch (NetRT injects 0.1–5 % loss at its core switch, seed 000 §IV), a
// corrupting link (Protego's 10⁻³ corruption loss, seed 003 §1 and §4),
// reordering (DCP's packet spraying and adaptive routing, seed 002 §2),
// and delay, duplication and rate limits besides.
//
// Impairment is a property of the wire, not a stage: a Port wraps the
// port a worker uses, directly on the AF_XDP or in-memory port and
// inside any other wrapper (llr's receiver), and every frame that leaves
// by it or arrives on it meets its rules, whatever put it there — the
// pipeline's forwarded frames, and equally what stages send from timers
// or Poll (llr's retransmitted copies, dummies, ACKs and loss notices,
// seed 003 §3; NetRT's requests, notices and pool retransmissions, seed
// 000 §III; DCP header-only packets, seed 002 §4.2) and the worker's PFC
// frames. The loss a recovery mechanism claims to survive thus also
// strikes its own frames, as a real lossy link does.
//
// # Impairments
//
// A rule names a port, a direction and a filter, and any of:
//
//   - loss: each frame is dropped with probability p (Bernoulli);
//   - burst: Gilbert–Elliott loss. A two-state chain steps once per
//     matching frame: good→bad with probability p, bad→good with r; a
//     frame is lost with probability 1−k when good and 1−h when bad
//     (k=1, h=0 unless given). The loss rate is
//     (r(1−k) + p(1−h))/(p+r); with k=1, h=0 it is p/(p+r), in bursts of
//     mean length 1/r. The form {loss, length} sets that rate and mean
//     burst length directly;
//   - corrupt: the frame is dropped with probability p as a receiving
//     MAC drops a frame whose FCS fails; counted apart from loss;
//   - duplicate: with probability p a copy is sent as well, byte for
//     byte (it takes a free frame; none free means no copy);
//   - reorder: with probability p the frame is held for delay, so the
//     frames behind it overtake it;
//   - delay: every frame is held for mean ± jitter (uniform), and held
//     frames leave in the order of their deadlines: a jitter wider than
//     the frames' spacing reorders them too;
//   - rate: a token-bucket policer at that many bits per second, bucket
//     rate_burst (default 1 ms at the rate, at least 18 KiB); frames it
//     has no tokens for are dropped;
//   - trim: a DCP data packet (tag 10) that loss or burst picks is not
//     dropped but trimmed in place to a header-only packet (rocev2.Trim),
//     which goes on the wire in its place, as DCP's testbed switch did ("the P4 switch executes the packet trimming module for
//     DCP traffic, while it simply drops packets for CX5 traffic", seed
//     002 §6.1); every other packet picked is dropped as before. The
//     header-only packet gets no further impairment from that rule. The
//     wire has no queue: where DCP's switch puts the packet on its
//     control queue (seed 002 §4.2), here it takes its frame's place
//     on the wire at once. It
//     needs the classifier's DCP mode (tord turns it on when a rule
//     trims); without it tagged data cannot be trimmed and is dropped.
//
// The impairments come in the order a frame meets them: on ingress the
// wire (burst, loss, corrupt) and then the policer, on egress the policer
// and then the wire. A frame held by its ingress rule and, once
// forwarded, by its egress rule waits for the sum.
//
// # Ports and rules
//
// An egress rule acts on every frame the port's Transmit is given: the
// worker's egress queues (forwarded frames, frames stages emit, PFC) all
// drain through it. An ingress rule acts on every frame the inner port
// receives, before an outer wrapper or the worker sees it. Of the rules
// of a port and direction, the first whose filter matches applies: at
// most one per frame and side. A port with no rules passes frames
// straight through at the cost of one atomic load per call, so tord
// wraps every port and a live Update may give any of them rules.
//
// Filters: match all (the default: every frame on the wire), roce
// (RoCEv2 only, so ARP, LLDP, PFC and the link shim's control frames are
// spared) or fabric (RoCEv2, any frame carrying the link shim, and
// PFC/PAUSE: what switches and RNICs exchange, but not ARP, ND, LLDP or
// other IP, which a testbed's control plane needs) or data (the data
// plane alone: RoCEv2 requests and READ responses, link-shimmed or
// not — the frames the data and retransmission classes below count —
// so that loss never touches header-only packets, ACKs, NAKs, CNPs,
// NetRT's messages, the link shim's control frames or PFC, as DCP's
// testbed loses packets, seed 002 §6.1); with roce, opcodes
// limits the rule to those BTH opcodes (say, to lose data but not ACKs
// or CNPs); dscp limits it to IP packets of that DSCP. A filter costs a
// parse of the frame with the worker's classifier; match all costs none.
//
// # What the impairment destroys
//
// A destroyed frame goes back to Mem and is counted by its direction,
// its class and the cause. The causes are loss, burst (Gilbert–Elliott),
// corrupt (a simulated FCS error, which the receiving MAC drops),
// policed (over the rule's rate) and overflow (a frame or copy to hold
// when the held frames already take hold_bytes: the port never exceeds
// its budget and never holds a frame silently). The classes are data
// (RoCEv2 requests and READ responses, link-shimmed originals among
// them), retransmission (frames the link shim marks as retransmitted,
// seed 003 §3.2), control (the link shim's dummies, ACKs, loss notices
// and protect requests; NetRT requests and notices; DCP header-only
// packets and ACKs; RoCE ACKs, NAKs and CNPs; PFC and PAUSE) and other
// (ARP, ND, LLDP, IP). NetRT's pool retransmissions (seed 000 §III-B)
// are byte-identical copies of the original, so the wire counts them as
// data: NetRT's own counters say how many it sent.
//
// # Holding frames
//
// Delayed and reordered frames wait in a min-heap per direction ordered
// by deadline (then by arrival), at most hold_bytes (default 1 MiB) per
// port and worker, both directions together, and never more frames than
// the worker's Mem has. Due egress frames leave at the port's next
// Transmit or Service, due ingress frames at its next Receive, ahead of
// newer frames. Ports have no clock: each runs on its worker's
// (PortConfig.Clock), and reports its earliest deadline
// (dataplane.Holder), which a sleeping worker wakes for. Copies that
// need tx room the worker did not ask for, and frames the inner port
// refuses, wait in the same heap due at once, within the same budget.
// Every held frame is sent at its deadline, destroyed as overflow, or —
// when the worker stops — freed by Flush and counted as Flushed; tord
// calls Flush on every Port after its worker's Run returns.
//
// # Determinism
//
// Each Port draws from its own PCG (math/rand/v2), seeded on adopting a
// rule set with splitmix64(seed) and splitmix64(seed ^ splitmix64(worker)
// ^ splitmix64(FNV-1a(port name))). A probability of 0 or 1 draws
// nothing, any other one draw per decision. So one seed, one worker, one
// port and one frame sequence give the same decisions on every run, and
// links draw independent streams. Tests use a fixed seed anyway.
//
// Rates and budgets are per worker: with W workers sharing a port's
// traffic, each polices its share to rate, so set rate to the port's
// target divided by W (testbeds run one worker).
//
// # Counters
//
// Stats, per Port (summed across workers by tord's collector), per
// direction, growing from start whatever rule sets come and go: frames
// matched; frames destroyed by class and cause; DCP data packets
// trimmed instead (Trimmed); copies made and copies that found no free
// frame; frames reordered and delayed. Per port: frames and bytes held
// now and the high-water mark of the bytes, frames released and
// flushed, rule sets adopted. Snapshot is safe from any goroutine and is
// refreshed every millisecond of worker time. tord exports them as
// rocetor_impair_* (docs/operations.md).
//
// # Configuration
//
// In tord's YAML:
//
//	impair:
//	  seed: 1
//	  hold_bytes: 1MiB
//	  rules:
//	    - port: s2            # an interface of tord's ports list
//	      direction: egress   # ingress | egress
//	      match: roce         # all (default) | roce | fabric | data
//	      opcodes: [RC_RDMA_WRITE_MIDDLE, 0x0a]  # optional, with roce
//	      dscp: 26            # optional
//	      loss: 0.01
//	      burst: {p: 0.001, r: 0.3, k: 1, h: 0}  # or {loss: 0.01, length: 4}
//	      corrupt: 1e-4
//	      duplicate: 0
//	      reorder: {p: 0.01, delay: 50us}
//	      delay: {mean: 10us, jitter: 5us}
//	      rate: 1G
//	      rate_burst: 64KiB
//	    - port: s1
//	      direction: egress
//	      loss: 0.01
//	      trim: true          # DCP data picked by loss/burst becomes header-only
//
// and in Go:
//
//	ctl, err := impair.NewControl(cfg.Impair, cfg.Ports) // validates; names the bad field
//	ip := ctl.Wrap(xdpPort, impair.PortConfig{Worker: w, Mem: mem, Clock: clock, Classifier: cls})
//	port := llrStage.Wrap(i, ip, mem)                     // other wrappers go outside
//	... WorkerConfig{Ports: []dataplane.Port{port, …}, Clock: clock, …} ...
//	err = ctl.Update(newCfg)                              // any goroutine, e.g. the admin API
//	ip.Flush()                                            // once the worker has stopped
//
// Update swaps the rule set atomically: each Port adopts it at its
// worker's next call, with fresh per-rule state, and reseeded.
package impair
