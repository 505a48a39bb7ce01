// Command torctl operates a running tord through its admin API
// (docs/operations.md, "Admin API"): what the switch is doing — ports,
// queues, workers, stages, drops, busiest flows, link-local
// retransmission — and what an operator changes while it runs — stages
// per port, parameters, a configuration reload, a packet capture.
//
//	torctl [--admin 127.0.0.1:9479] [--token-file F] [-o table|json] COMMAND
//
// Exit status: 0 done, 1 tord refused or could not be reached, 2 bad
// usage.
package main
