// Package impair is a switch stage that makes a fabric lossy on purpose,
// so testbeds can reproduce the conditions the seed papers evaluate:
// random loss at one switch (NetRT injects 0.1–5 % loss at its core
// switch, seed 000 §IV), a corrupting link (Protego's 10⁻³ corruption
// loss, seed 003 §1 and §4), reordering (DCP's packet spraying and
// adaptive routing, seed 002 §2), and delay, duplication and rate
// limits besides.
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
//     dropped but trimmed in place to a header-only packet (rocev2.Trim)
//     and moved to its egress port's "control" queue, as DCP's testbed
//     switch did ("the P4 switch executes the packet trimming module for
//     DCP traffic, while it simply drops packets for CX5 traffic", seed
//     002 §6.1); every other packet picked is dropped as before. The
//     header-only packet gets no further impairment from that rule. It
//     needs the classifier's DCP mode (tord turns it on when a rule
//     trims); without it tagged data cannot be trimmed and is dropped.
//
// Drops come in the order a frame meets them: on ingress the wire
// (burst, loss, corrupt) and then the policer, on egress the policer and
// then the wire. A frame held by both its ingress and its egress rule is
// held for the sum; a copy of a held frame is held with it.
//
// # Ports and placement
//
// An ingress rule acts on frames received on its port (Packet.In). An
// egress rule acts on frames the pipeline forwards out of its port: the
// stage reads Packet.Out as the earlier stages left it, so egress rules
// need impair after fwd. Held and copied frames go straight to their
// egress queue (Ctx.Emit) and so need an egress port too: a frame with
// none (impair before fwd) passes through unheld and uncopied, counted
// as Unrouted. tord therefore puts impair last in the pipeline, after
// fwd, where both directions work. For each packet the first rule of
// its ingress port whose filter matches applies, then the first of its
// egress port: at most one rule per side.
//
// Filters: match all (every frame) or roce (RoCEv2 only, so ARP, LLDP,
// PFC and other control traffic are spared); with roce, opcodes limits
// the rule to those BTH opcodes (say, to lose data but not ACKs or
// CNPs); dscp limits it to IP packets of that DSCP.
//
// # Drops
//
// Counted by the worker, labelled by reason:
//
//	impair_loss      Bernoulli loss
//	impair_burst     Gilbert–Elliott loss
//	impair_corrupt   simulated FCS error
//	impair_policed   over the rule's rate
//	impair_overflow  a frame (or copy) to hold when the held frames
//	                 already take hold_bytes: the stage never exceeds
//	                 its budget and never holds a frame silently
//
// A released frame can still meet a full egress queue (queue_full), and
// a copy a lack of frames (no_frame), as any frame can.
//
// # Holding frames
//
// Held frames wait in a min-heap ordered by deadline (then by arrival),
// at most hold_bytes (default 1 MiB) and never more frames than the
// worker's Mem has, per worker. The stage keeps one worker timer armed
// for the earliest deadline rather than one per frame, and also releases
// due frames at the start of every batch. Every held frame is emitted at
// its deadline, dropped as impair_overflow, or — when the worker stops —
// freed by Close and counted as Flushed. The dataplane has no shutdown
// hook for stages, so whoever builds the pipeline (tord) calls Close on
// each Stage after its worker's Run returns.
//
// # Determinism
//
// Each Stage draws from its own PCG (math/rand/v2), seeded on adopting a
// rule set with splitmix64(seed) and splitmix64(seed ^ splitmix64(worker)),
// worker being the number given to NewStage. A probability of 0 or 1
// draws nothing, any other one draw per decision. So one seed, one worker
// number and one packet sequence give the same decisions on every run,
// and workers draw independent streams. Tests use a fixed seed anyway.
//
// Rates and budgets are per worker: with W workers sharing a port's
// traffic, each polices its share to rate, so set rate to the port's
// target divided by W (testbeds run one worker).
//
// # Counters
//
// Stats, per Stage (summed across workers by the collector): per rule,
// frames matched; lost, burst-lost, corrupted, policed and overflowed;
// DCP data packets trimmed instead of lost (Trimmed; tord exports
// rocetor_impair_trimmed_total);
// copies made and copies that found no frame; frames reordered, delayed
// and passed unrouted; frames and bytes held now. Per stage: frames and
// bytes held (including under a replaced rule set) and their high-water
// mark, frames released and flushed, timers refused, rule sets adopted.
// Snapshot is safe from any goroutine and is refreshed every millisecond
// of worker time.
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
//	      match: roce         # all (default) | roce
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
//	st := impair.NewStage(ctl, w)                         // one per worker, after fwd
//	... Stages: []dataplane.Stage{fwdStage, st} ...
//	err = ctl.Update(newCfg)                              // any goroutine, e.g. the admin API
//	defer st.Close()                                      // once the worker has stopped
//
// Update swaps the rule set atomically: each worker adopts it at its next
// batch, with fresh per-rule state and counters, and reseeded.
package impair
