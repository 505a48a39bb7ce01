# Thin wrapper over the go tool; every target is one or two commands.
GO ?= go
BIN := bin

.PHONY: build test bench bench-forward generate lint fuzz demo sim

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Unit tests run anywhere; namespace and tshark tests run as root and skip
# with a reason otherwise.
# -p 1: the privileged tests run real switches and hosts on the machine's
# cores; two packages of them at once starve each other's workers for
# milliseconds, which the loss-recovery timeouts they assert on notice.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -p 1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# tord against dpdk-testpmd, kernel forwarding and an XDP router on veth
# namespaces; needs root. BENCH_ARGS passes options, e.g. --repeat 3.
bench-forward:
	scripts/bench-forward.sh $(BENCH_ARGS)

generate:
	$(GO) generate ./...

lint:
	test -z "$$(gofmt -l .)"
	$(GO) vet ./...

# Each fuzz target for FUZZTIME (default 1m): the wire formats
# (rocev2), and the whole pipeline with every stage on (cmd/tord's
# FuzzPipeline). New corpus entries land in each package's
# testdata/fuzz and are committed; go test, and so CI, replays them.
FUZZTIME ?= 1m
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

# The chain h1 — tor1 — core — tor2 — h2 with 1% loss at core: roceperf
# WRITEs through three tords, the FCT table and each switch's counters (root).
demo:
	$(GO) build -o $(BIN)/ ./cmd/tord ./cmd/roceperf ./cmd/testbed
	$(BIN)/testbed run demo --bin $(BIN)

# The fabric simulator (docs/simulator.md): a 16-host fat tree, WebSearch
# flows at 50% load over IRN and DCQCN with ECN marking; no root needed.
sim:
	$(GO) build -o $(BIN)/ ./cmd/torsim
	printf 'ecn: {}\n' > $(BIN)/sim-switch.yaml
	$(BIN)/torsim --topo fattree:k=4 --rate 100G --transport irn --cc dcqcn --switch $(BIN)/sim-switch.yaml \
		--workload poisson --cdf websearch --load 0.5 --duration 1ms --max-size 4MB --out $(BIN)/sim
