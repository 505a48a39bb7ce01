// Package trust enforces where each kind of control frame may come from:
// the switch's trust boundaries (docs/operations.md, "Trust
// boundaries"). A ToR faces hosts it does not control, and several of
// rocetor's recovery mechanisms act on control messages: NetRT's
// requests make the source ToR resend pooled packets, its unfulfilled
// notices push a flow into Waiting, llr's shim frames carry sequence
// numbers, ACKs, loss notices and protection requests, and DCP's
// header-only packets ride the lossless control queue. Stage drops
// every such frame that arrives where it cannot legitimately come from,
// each with its own counted reason, before any other stage sees it.
//
// # Stage
//
// Stage runs first, before fwd, on every packet the worker received
// (frames stages emit later do not pass it: they are the switch's own).
// By the packet's ingress port, in this order:
//
//   - a frame that still carries a link shim (rocev2.Meta.ShimOff, or a
//     link control frame: dummy, ACK, loss notice, sync, protection
//     request) is dropped, trust_llr. On a port llr protects, llr's
//     receiver (tor/llr.Port) consumes the link's control frames and
//     strips the shim of the others before the pipeline sees them; a
//     shim that reaches the pipeline therefore came from a neighbour
//     llr does not protect the link with (or is a second, forged shim
//     inside the first). Protego's shim is link-local (seed 003 §3.1):
//     no legitimate shim crosses a switch, and one forwarded onto a
//     protected link would be taken by the receiver there for a
//     sequence of that link's sender.
//   - a NetRT message (opcode 0xc0, rocev2.NetRT) from a host port is
//     dropped, trust_netrt_host: NetRT's requests and unfulfilled
//     notices are exchanged by ToRs (seed 000 §III-B), never by hosts.
//   - on a switch that runs NetRT (Config.NetRT), a NetRT message from a
//     fabric port whose source address is not in Config.Peers is
//     dropped, trust_netrt_peer. A request travels on the served flow's
//     reversed addresses and a notice on its own, so the source of
//     either is a host behind the peer ToR, which lies in the peer
//     prefixes exactly when that ToR runs NetRT with this one. Empty
//     Peers accepts every source, as NetRT then serves every flow.
//   - a DCP header-only packet (rocev2.Meta.HeaderOnly) that carries
//     payload is dropped, trust_dcp_payload, from any port. A switch
//     consumes no DCP frame: it makes header-only packets by trimming
//     (tor/trim) and forwards them, and a receiving RNIC returns them to
//     their sender (seed 002 §4.1 ②), so they cross host ports
//     legitimately. But they take the lossless control queue, ahead of
//     the data queue and its trimming, and a genuine one has nothing
//     after the DCP header (rocev2.Trim): one with payload is data
//     dressed as control.
//
// PFC and PAUSE frames never reach a stage: the worker consumes them on
// receipt, and refuses them (trust_pfc) on the ports
// dataplane.WorkerConfig.RefusePFC names.
//
// Ports: any ingress; a packet left to forward keeps the port and queue
// later stages choose. Nothing is held, no timer armed, nothing
// allocated per packet.
//
// # Drops
//
//	trust_llr          a link-shim frame reached the pipeline (port not protected by llr)
//	trust_netrt_host   a NetRT message from a host port
//	trust_netrt_peer   a NetRT message from a fabric port, source not a NetRT peer
//	trust_dcp_payload  a DCP header-only packet that carries payload
//
// # Counters
//
// Stats counts each refusal per ingress port (the first MaxPorts ports;
// the rest share a sink), so an operator sees which port sends what it
// must not. Snapshot is refreshed every millisecond of worker time
// (Poll publishes it also when no traffic comes). tord exports
// rocetor_trust_refused_total{port, kind} and, as every drop,
// rocetor_drops_total{reason}.
//
// # Configuration
//
// In tord's YAML (the trust: section and netrt.prefixes):
//
//	trust:
//	  hosts: [h1, h2]     # host-facing ports; default: the ports netrt.fabric does not name
//	  pfc_ports: [s1, s2] # ports whose PFC/PAUSE frames are honoured; default: every port
//
// and in Go:
//
//	st := trust.NewStage(trust.Config{Hosts: 1<<0 | 1<<1, NetRT: true, Peers: prefixes})
//	... Stages: []dataplane.Stage{st, fwdStage, ...} ...
package trust
