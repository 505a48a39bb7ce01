#!/bin/sh
# bench-instructions.sh PKG BENCH [N [FUNC]]: instructions a packet of a Go benchmark, counted by
# callgrind (the two CPUs' ns per packet move by up to 2× between machine states; see
# docs/performance.md, "Instruction counts"). The benchmark runs twice, N and 2N iterations
# (default 400000), and the difference over N is what one iteration costs, setup left out.
# With FUNC, a function the benchmark's loop runs within, only what runs inside it counts.
# A run's total still moves by up to about 1.5 million instructions now and then, whatever
# else the machine does (BenchmarkPipelineForward/plain: 2,824 to 2,857 an iteration at
# N = 100000 over five runs of one tree, 2,840 and 2,840 at 400000), so N is large. Without
# it the runtime's other threads count too (sysmon wakes by the wall clock, which callgrind
# stretches by the machine's load): BenchmarkPipelineForward/stages moved by up to 80
# instructions between runs of one binary.
# Example: scripts/bench-instructions.sh ./tor/pipeline 'PipelineForward/stages$' 400000 rocetor/tor/pipeline.benchForward
set -eu
pkg=$1 bench=$2 n=${3:-400000} fn=${4:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/b.test" "$pkg"
count() {
  # Go's asynchronous preemption signals trip callgrind's signal handling: off. The
  # collector too: its work depends on when it runs.
  GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind ${fn:+--toggle-collect="$fn"} --callgrind-out-file="$dir/cg.$1" \
    "$dir/b.test" -test.run '^$' -test.bench "$bench" -test.benchtime="$1"x -test.cpu 1 2>&1 |
    awk '/I +refs:/ {gsub(",", "", $NF); print $NF}'
}
a=$(count "$n")
b=$(count $((2 * n)))
echo "$bench: $(( (b - a) / n )) instructions an iteration ($a at $n, $b at $((2 * n)))"
