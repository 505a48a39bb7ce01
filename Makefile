# Thin wrapper over the go tool; every target is one or two commands.
GO ?= go
BIN := bin

.PHONY: build test bench generate lint fuzz demo

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Unit tests run anywhere; namespace and tshark tests run as root and skip
# with a reason otherwise.
test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

generate:
	$(GO) generate ./...

lint:
	test -z "$$(gofmt -l .)"
	$(GO) vet ./...

# Each fuzz target for FUZZTIME (default 1m); new corpus entries land in
# rocev2/testdata/fuzz and are committed.
FUZZTIME ?= 1m
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

# The switch on a namespace testbed: ping and TCP through tord (root).
demo:
	scripts/demo.sh
