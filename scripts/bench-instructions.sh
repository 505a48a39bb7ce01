#!/bin/sh
# bench-instructions.sh PKG BENCH [N]: instructions a packet of a Go benchmark, counted by
# callgrind, which counts the same for the same binary and inputs whatever else the machine
# does (the two CPUs' ns per packet move by up to 2× between machine states; see
# docs/performance.md, "Instruction counts"). The benchmark runs twice, N and 2N iterations
# (default 100000), and the difference over N is what one iteration costs, setup left out.
# Example: scripts/bench-instructions.sh ./tor/pipeline 'PipelineForward/stages$'
set -eu
pkg=$1 bench=$2 n=${3:-100000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/b.test" "$pkg"
count() {
  # Go's asynchronous preemption signals trip callgrind's signal handling: off. The
  # collector too: its work depends on when it runs, which moved a count by up to 40
  # instructions an iteration between runs of one binary; without it, by under 1.
  GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$1" \
    "$dir/b.test" -test.run '^$' -test.bench "$bench" -test.benchtime="$1"x -test.cpu 1 2>&1 |
    awk '/I +refs:/ {gsub(",", "", $NF); print $NF}'
}
a=$(count "$n")
b=$(count $((2 * n)))
echo "$bench: $(( (b - a) / n )) instructions an iteration ($a at $n, $b at $((2 * n)))"
