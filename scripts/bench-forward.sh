#!/usr/bin/env bash
# Forwarding throughput of tord side by side with its peers, in one run, on
# veth pairs between three network namespaces:
#
#   gen ──veth── dut ──veth── sink
#   dpdk-testpmd      the device     XDP program that counts
#   txonly over       under test     (veth's xdp_drops counter)
#   net_af_xdp                       and drops every UDP frame
#
# The generator is DPDK's dpdk-testpmd (--forward-mode=txonly over the
# net_af_xdp PMD): UDP frames from 198.18.0.1 to 198.18.1.2, 64 B and
# 1024 B; with --roce to UDP port 4791, so that every frame is a RoCEv2
# packet (a zero BTH: an RC SEND First, PSN 0, QP 0, with payload). Where
# dpdk-testpmd is not installed (Debian ships it in dpdk-dev), or
# with --gen txgen, scripts/bench-forward/txgen sends the same frames
# from one AF_XDP socket in copy mode, and the testpmd setup is left out
# of the defaults. The device under test is, in turn:
#
#   tord      rocetor's switch: forwarding only, one worker, --poll busy
#   tord-adaptive
#             the same with --poll adaptive (spin, then sleep in poll)
#   tord-netrt
#             tord (--poll busy) with NetRT on: the generator's side faces
#             hosts, the sink's the fabric, so every RoCEv2 data frame is
#             copied into the duplicate pool (SrcToR) and, with no ACK
#             coming back, leaves it when its hold time runs out: a copy,
#             a pool entry and a retirement per frame. Needs --roce.
#   tord-ecn  tord (--poll busy) with ECN marking on every queue from the
#             first byte of depth (ecn: Kmin 1 B, Kmax 2 B): the marking
#             point runs on every frame. testpmd's frames are Not-ECT, so
#             none is marked: this is what marking costs a switch per
#             frame; a frame that is marked costs 7–9 ns more
#             (BenchmarkEgressMarking, dataplane).
#   tord-busypoll
#             tord (--poll busy) with the kernel's preferred busy polling
#             (xdp.busy_poll 50us, busy_poll_budget 64; the DUT's veths
#             with napi_defer_hard_irqs 2 and gro_flush_timeout 200 µs):
#             tord's thread runs veth's NAPI poll itself, in a recvfrom
#             per port and loop, instead of the NAPI thread
#   testpmd   dpdk-testpmd --forward-mode=mac over net_af_xdp on both veths
#             (rewrites both MACs, like a router, but looks nothing up)
#   kernel    Linux IP forwarding (net.ipv4.ip_forward=1, no XDP)
#   xdp       an in-kernel XDP router: bpf_fib_lookup, TTL, MACs, redirect
#             (scripts/bench-forward/router.bpf.c; xdp-bench of xdp-tools
#             1.3.1 does not load on Linux 6.18, which lacks the
#             xdp_redirect_map tracepoints it attaches to; see that file)
#
# With --queues N (txgen only) every veth has N queues, the generator
# sends on all N (veth hands tx queue q's frames to its peer's rx queue
# q), tord runs N workers (worker w owns queue w of every port), and the
# report adds each worker's share, from tord's /metrics. Everything of
# the DUT still runs on --dut-cpu: on a 2-core machine the run shows
# that the work spreads over the workers and what the split costs, not
# that it scales with cores.
#
# Each runs for --warmup seconds, then the frames reaching the sink are
# counted for --duration seconds. Then an overload run: tord shaped to
# --overload-rate while the generator sends faster; its /metrics are
# scraped before and after, and the run fails unless every queue stayed
# within its byte limit and tord's counters balance (rx = tx + drops +
# queued). A Markdown report goes to stdout (and --out FILE).
#
# CPU placement (2 cores): the generator runs on --gen-cpu, the device
# under test on --dut-cpu (taskset, and DPDK lcores mapped with --lcores
# 0@CPU,1@CPU so that both of testpmd's lcores stay on that CPU). veth
# delivers frames in the softirq of the CPU that sends them, so by default
# the generator's CPU would also run the DUT's receive half (its XDP
# program, the copy into the AF_XDP socket, or all of kernel forwarding).
# With --rx-on dut (the default) the DUT's ingress veth gets threaded NAPI
# (and GRO, which veth needs to use NAPI without XDP; the generator's veth
# does no TSO, without which veth bypasses NAPI) and its NAPI thread is
# pinned to the DUT's CPU: everything the DUT does then runs on the DUT's
# CPU, the same for every setup. --rx-on gen leaves veth as it is (then
# the kernel and xdp setups run entirely on the generator's CPU). The
# sink's XDP program runs in the softirq of whoever transmits into it,
# i.e. on the DUT's CPU, in every setup. docs/performance.md has both.
#
# Needs root, Go, clang (to build the two small XDP programs), iproute2,
# ethtool, curl and, for the testpmd generator and setup, dpdk-testpmd
# with net_af_xdp (Debian: dpdk-dev; apt-get install clang libbpf-dev
# ethtool curl dpdk-dev). Builds tord (and txgen) itself. Everything it
# creates — namespaces, veths, XDP programs, processes, DPDK runtime
# files — is removed on exit, on failure and on Ctrl-C.
#
#   sudo scripts/bench-forward.sh                      # make bench-forward
#   sudo scripts/bench-forward.sh --duration 5 --sizes 64 --setups "tord testpmd"
#   sudo scripts/bench-forward.sh --repeat 3 --out /tmp/bench.md
#   sudo scripts/bench-forward.sh --profile /tmp/tord.pprof   # + a CPU profile of tord at 64 B
#   sudo scripts/bench-forward.sh --setups "tord testpmd" --sizes 64 --perf /tmp/perf
#       # + where the DUT's CPU goes per forwarded frame, user and kernel
set -euo pipefail

usage() {
	cat <<'EOF'
usage: sudo scripts/bench-forward.sh [options]
  --duration S       seconds each setup is measured (default 10)
  --warmup S         seconds of traffic before measuring (default 3)
  --sizes "A B"      frame sizes in bytes, without FCS (default "64 1024")
  --setups "..."     any of: tord tord-adaptive tord-busypoll tord-netrt tord-ecn testpmd kernel xdp (default all but tord-busypoll, tord-netrt and tord-ecn)
  --queues N         queues per veth, tord workers and generator queues (default 1; not with testpmd)
  --gen testpmd|txgen the generator (default testpmd if dpdk-testpmd is installed, else txgen)
  --roce             send RoCEv2 frames (UDP port 4791) instead of UDP port 9; tord-netrt needs it
  --repeat N         measure every setup N times, report the median (default 1)
  --gen-cpu N        CPU of the generator (default 0)
  --dut-cpu N        CPU of the device under test (default 1)
  --rx-on dut|gen    CPU that runs veth's receive at the DUT (default dut; see the header)
  --overload-rate R  tord's shaped rate in the overload run (default 1G; "" skips the run)
  --overload-size B  frame size in the overload run (default 1024)
  --tord-args "..."  extra flags for tord, e.g. "--xdp-mode generic" (default none)
  --testpmd-args ".." extra testpmd application flags for the DUT testpmd, e.g. "--burst=64"
  --testpmd-vdev ".." extra net_af_xdp arguments for the DUT testpmd's two ports, e.g. "busy_budget=0"
  --profile FILE     also take a 5 s CPU profile of tord at the first size into FILE
  --perf DIR         record the DUT's CPU with perf (call graphs) in every window and report, per
                     setup, the nanoseconds of it each forwarded frame costs, by kernel and user
                     function group (scripts/bench-forward/perf-breakdown.py); profiles kept in DIR
  --out FILE         also write the report to FILE
  --keep             keep the work directory (logs, scrapes) even on success
EOF
}

# All in one function: bash reads it whole before running it, so editing
# this file during a run cannot break the run.
main() {
	DURATION=10 WARMUP=3 SIZES="64 1024" SETUPS="tord tord-adaptive testpmd kernel xdp" REPEAT=1
	GEN_CPU=0 DUT_CPU=1 RX_ON=dut OVERLOAD_RATE=1G OVERLOAD_SIZE=1024 PROFILE="" OUT="" KEEP=0 PERF=""
	TORD_ARGS="" TESTPMD_ARGS="" TESTPMD_VDEV="" ROCE=0 GEN="" SETUPS_GIVEN=0 QUEUES=1
	while [ $# -gt 0 ]; do
		case $1 in
		--duration) DURATION=$2; shift ;;
		--warmup) WARMUP=$2; shift ;;
		--sizes) SIZES=$2; shift ;;
		--setups) SETUPS=$2 SETUPS_GIVEN=1; shift ;;
		--gen) GEN=$2; shift ;;
		--queues) QUEUES=$2; shift ;;
		--repeat) REPEAT=$2; shift ;;
		--gen-cpu) GEN_CPU=$2; shift ;;
		--dut-cpu) DUT_CPU=$2; shift ;;
		--rx-on) RX_ON=$2; shift ;;
		--overload-rate) OVERLOAD_RATE=$2; shift ;;
		--overload-size) OVERLOAD_SIZE=$2; shift ;;
		--tord-args) TORD_ARGS=$2; shift ;;
		--testpmd-args) TESTPMD_ARGS=$2; shift ;;
		--testpmd-vdev) TESTPMD_VDEV=$2; shift ;;
		--profile) PROFILE=$2; shift ;;
		--perf) PERF=$2; shift ;;
		--out) OUT=$2; shift ;;
		--keep) KEEP=1 ;;
		--roce) ROCE=1 ;;
		-h | --help) usage; exit 0 ;;
		*) usage >&2; die "unknown argument $1" ;;
		esac
		shift
	done
	validate
	local d
	for d in "$PROFILE" "$OUT"; do
		if [ -n "$d" ]; then
			mkdir -p "$(dirname "$d")" || die "cannot create the directory of $d"
		fi
	done
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	WORK=$(mktemp -d /tmp/bench-forward.XXXXXX)
	# A short per-run prefix: namespaces, interface names (≤ 15 bytes, and
	# short enough that the NAPI thread's name "napi/<ifname>-<id>" keeps
	# it) and DPDK file prefixes of concurrent runs never collide.
	PFX="bf$(($$ % 100000))"
	NS_GEN=$PFX-gen NS_DUT=$PFX-dut NS_SINK=$PFX-sink
	IF_G0=${PFX}g0 IF_D0=${PFX}d0 IF_D1=${PFX}d1 IF_S0=${PFX}s0
	PIDS=()
	NETNS=()
	OK=0
	trap cleanup EXIT
	trap 'log "interrupted"; exit 130' INT TERM

	log "work directory $WORK"
	build
	topology
	local load_start load_end
	load_start=$(cut -d' ' -f1-3 /proc/loadavg)

	declare -gA PPS OFFERED CPU WORKERS
	local r size setup
	for ((r = 1; r <= REPEAT; r++)); do
		for size in $SIZES; do
			for setup in $SETUPS; do
				measure "$setup" "$size" "$r"
			done
		done
	done
	if [ -n "$OVERLOAD_RATE" ]; then
		overload
	fi
	if [ -n "$PROFILE" ]; then
		profile "${SIZES%% *}"
	fi
	load_end=$(cut -d' ' -f1-3 /proc/loadavg)
	# Not through a pipe: report must run in this shell to set OVERLOAD_FAILED.
	report "$load_start" "$load_end" >"$WORK/report.md"
	cat "$WORK/report.md"
	if [ -n "$OUT" ]; then
		cp "$WORK/report.md" "$OUT"
	fi
	if [ "${OVERLOAD_FAILED:-0}" = 1 ]; then
		die "overload run failed its checks (see above)"
	fi
	OK=1
}

log() { printf '[bench-forward] %s\n' "$*" >&2; }
die() {
	printf '[bench-forward] FAIL: %s\n' "$*" >&2
	exit 1
}

validate() {
	[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, XDP, AF_XDP): sudo $0"
	local n
	for n in "$DURATION" "$WARMUP" "$REPEAT" "$GEN_CPU" "$DUT_CPU" "$OVERLOAD_SIZE" "$QUEUES"; do
		[[ $n =~ ^[0-9]+$ ]] || die "expected a whole number, got '$n'"
	done
	if [ "$DURATION" -lt 1 ] || [ "$REPEAT" -lt 1 ]; then
		die "--duration and --repeat must be ≥ 1"
	fi
	[ "$GEN_CPU" != "$DUT_CPU" ] || die "--gen-cpu and --dut-cpu must differ"
	[ "$(nproc)" -ge 2 ] || die "needs two CPUs, one for the generator and one for the DUT"
	case $RX_ON in dut | gen) ;; *) die "--rx-on is dut or gen, not '$RX_ON'" ;; esac
	local s
	for s in $SIZES $OVERLOAD_SIZE; do
		if ! [[ $s =~ ^[0-9]+$ ]] || [ "$s" -lt 64 ] || [ "$s" -gt 1500 ]; then
			die "frame size $s: want 64 to 1500"
		fi
	done
	for s in $SETUPS; do
		case $s in tord | tord-adaptive | tord-busypoll | tord-netrt | tord-ecn | testpmd | kernel | xdp) ;; *) die "unknown setup '$s' (tord tord-adaptive tord-busypoll tord-netrt tord-ecn testpmd kernel xdp)" ;; esac
	done
	[[ " $SETUPS " != *" tord-netrt "* || $ROCE = 1 ]] || die "tord-netrt needs --roce: NetRT acts on RoCEv2 frames only"
	if [ -z "$GEN" ]; then
		GEN=txgen
		if [ "$QUEUES" = 1 ] && command -v dpdk-testpmd >/dev/null; then
			GEN=testpmd
		fi
	fi
	case $GEN in testpmd | txgen) ;; *) die "--gen is testpmd or txgen, not '$GEN'" ;; esac
	if [ "$SETUPS_GIVEN" = 0 ] && { [ "$QUEUES" -gt 1 ] || ! command -v dpdk-testpmd >/dev/null; }; then
		log "no testpmd setup (dpdk-testpmd is not installed, or --queues > 1)"
		SETUPS=${SETUPS/testpmd /}
	fi
	if [ "$QUEUES" -lt 1 ] || [ "$QUEUES" -gt 8 ]; then
		die "--queues $QUEUES: want 1 to 8"
	fi
	if [ "$QUEUES" -gt 1 ] && [[ $GEN = testpmd || " $SETUPS " == *" testpmd "* ]]; then
		die "--queues > 1 runs with the txgen generator and without the testpmd setup"
	fi
	GO=$(command -v go || echo /usr/local/go/bin/go)
	local t need=("$GO" clang ip ethtool curl taskset awk)
	[[ $GEN != testpmd && " $SETUPS " != *" testpmd "* ]] || need+=(dpdk-testpmd)
	[ -z "$PERF" ] || need+=(perf python3)
	for t in "${need[@]}"; do
		command -v "$t" >/dev/null || die "missing $t (Debian: golang clang libbpf-dev iproute2 ethtool curl util-linux dpdk-dev)"
	done
}

# cleanup stops what this run started, in reverse, and deletes the
# namespaces; with them go the veths and every XDP program on them.
cleanup() {
	local rc=$?
	trap - INT TERM
	if [ -n "${NAP_PID:-}" ]; then
		kill "$NAP_PID" 2>/dev/null || true
	fi
	local i pids=("${PIDS[@]}")
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop_pid "${pids[i]}" 2>/dev/null || true
	done
	for i in "${NETNS[@]}"; do
		ip netns del "$i" 2>/dev/null || true
	done
	if [ -n "${PFX:-}" ]; then
		rm -rf "/var/run/dpdk/${PFX}g" "/var/run/dpdk/${PFX}d"
	fi
	if [ "$OK" = 1 ] && [ "$KEEP" = 0 ]; then
		rm -rf "$WORK"
	elif [ -d "${WORK:-}" ]; then
		log "logs kept in $WORK"
	fi
	exit "$rc"
}

# start runs a command in the background and remembers its pid; the
# commands are exec chains (ip netns exec, taskset), so the pid is that of
# the final program.
start() {
	local logf=$1
	shift
	"$@" >"$logf" 2>&1 </dev/null &
	PIDS+=("$!")
	LAST_PID=$!
}

# stop_pid sends SIGINT (tord and testpmd shut down cleanly on it:
# detach XDP, close sockets, print totals), then SIGKILL after 10 s.
stop_pid() {
	local pid=$1 i
	kill -INT "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid did not stop on SIGINT; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	local keep=() p
	for p in "${PIDS[@]}"; do
		[ "$p" = "$pid" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

build() {
	log "building tord and the XDP programs"
	(cd "$ROOT" && "$GO" build -buildvcs=false -o "$WORK/tord" ./cmd/tord) || die "go build ./cmd/tord failed"
	if [ "$GEN" = txgen ]; then
		(cd "$ROOT" && "$GO" build -buildvcs=false -o "$WORK/txgen" ./scripts/bench-forward/txgen) ||
			die "go build ./scripts/bench-forward/txgen failed"
	fi
	local p
	for p in sink router; do
		clang -O2 -g -Wall -target bpf -I/usr/include/"$(uname -m)"-linux-gnu \
			-c "$ROOT/scripts/bench-forward/$p.bpf.c" -o "$WORK/$p.bpf.o" ||
			die "clang failed on scripts/bench-forward/$p.bpf.c (needs clang and libbpf-dev)"
	done
}

inns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

topology() {
	log "namespaces $NS_GEN — $NS_DUT — $NS_SINK"
	local ns
	for ns in "$NS_GEN" "$NS_DUT" "$NS_SINK"; do
		ip netns add "$ns"
		NETNS+=("$ns")
		ip -n "$ns" link set lo up
		# No IPv6: no router solicitations or MLD reports in the counts.
		inns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	done
	local q=(numtxqueues "$QUEUES" numrxqueues "$QUEUES")
	ip link add "$IF_G0" netns "$NS_GEN" "${q[@]}" type veth peer name "$IF_D0" netns "$NS_DUT" "${q[@]}"
	ip link add "$IF_D1" netns "$NS_DUT" "${q[@]}" type veth peer name "$IF_S0" netns "$NS_SINK" "${q[@]}"
	ip -n "$NS_GEN" addr add 198.18.0.1/24 dev "$IF_G0"
	ip -n "$NS_DUT" addr add 198.18.0.254/24 dev "$IF_D0"
	ip -n "$NS_DUT" addr add 198.18.1.254/24 dev "$IF_D1"
	ip -n "$NS_SINK" addr add 198.18.1.2/24 dev "$IF_S0"
	# veth hands a frame to the peer's NAPI (and so to its threaded NAPI,
	# see --rx-on) only if the sending device does no TSO; otherwise the
	# kernel setup would forward in the generator's softirq.
	inns "$NS_GEN" ethtool -K "$IF_G0" tso off >/dev/null
	ip -n "$NS_GEN" link set "$IF_G0" up
	ip -n "$NS_DUT" link set "$IF_D0" up
	ip -n "$NS_DUT" link set "$IF_D1" up
	ip -n "$NS_SINK" link set "$IF_S0" up
	MAC_G0=$(inns "$NS_GEN" cat "/sys/class/net/$IF_G0/address")
	MAC_D0=$(inns "$NS_DUT" cat "/sys/class/net/$IF_D0/address")
	MAC_S0=$(inns "$NS_SINK" cat "/sys/class/net/$IF_S0/address")
	# The sink never answers ARP for the DUT: its XDP program would pass
	# ARP, but a static neighbour keeps the first frames from being
	# dropped while tord's managed neighbour resolves.
	ip -n "$NS_DUT" neigh replace 198.18.1.2 lladdr "$MAC_S0" dev "$IF_D1" nud permanent
	ip -n "$NS_SINK" link set dev "$IF_S0" xdpdrv obj "$WORK/sink.bpf.o" sec xdp
	if [ "$RX_ON" = dut ]; then
		inns "$NS_DUT" ethtool -K "$IF_D0" gro on >/dev/null
		inns "$NS_DUT" sh -c "echo 1 > /sys/class/net/$IF_D0/threaded"
	fi
}

# pin_napi moves the NAPI threads of this run's interfaces to the DUT's
# CPU. veth recreates them when an XDP program comes or goes, so it runs
# after every start.
pin_napi() {
	[ "$RX_ON" = dut ] || return 0
	local pid
	for pid in $(pgrep "^napi/$PFX(g0|d0|d1|s0)-" || true); do
		taskset -pc "$DUT_CPU" "$pid" >/dev/null
	done
}

sink_count() {
	inns "$NS_SINK" ethtool -S "$IF_S0" | awk '$1 ~ /^rx_queue_[0-9]+_xdp_drops:$/ { s += $2 } END { print s + 0 }'
}

gen_count() {
	inns "$NS_GEN" cat "/sys/class/net/$IF_G0/statistics/tx_packets"
}

# wait_for polls a command for up to $1 seconds.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

alive() { kill -0 "$1" 2>/dev/null; }

# EAL flags that work on this kind of machine: no hugepages (-m MB of
# ordinary memory), no PCI scan, no shared config or runtime files
# (--no-shconf; --in-memory refuses --no-huge), both lcores on one CPU.
eal() {
	local cpu=$1 prefix=$2
	printf '%s\n' --no-huge -m 512 --no-pci --no-shconf "--file-prefix=$PFX$prefix" \
		--lcores "0@$cpu,1@$cpu" --log-level=lib.eal:warning
}

start_gen() {
	local size=$1 logf=$2
	if [ "$GEN" = txgen ]; then
		local roce=()
		[ "$ROCE" = 0 ] || roce=(--roce)
		start "$logf" ip netns exec "$NS_GEN" taskset -c "$GEN_CPU" "$WORK/txgen" --iface "$IF_G0" \
			--dst-mac "$MAC_D0" --size "$size" --queues "$QUEUES" "${roce[@]}"
		GEN_PID=$LAST_PID
		wait_for 20 grep -q 'txgen: sending' "$logf" || die "generator did not start; see $logf"
		return
	fi
	local -a eal_args
	mapfile -t eal_args < <(eal "$GEN_CPU" g)
	local -a udp=()
	[ "$ROCE" = 0 ] || udp=(--tx-udp=4791,4791)
	start "$logf" ip netns exec "$NS_GEN" taskset -c "$GEN_CPU" dpdk-testpmd "${eal_args[@]}" \
		--vdev "net_af_xdp0,iface=$IF_G0" -- \
		--nb-cores=1 --forward-mode=txonly --txpkts="$size" --total-num-mbufs=8192 \
		--eth-peer=0,"$MAC_D0" --tx-ip=198.18.0.1,198.18.1.2 --stats-period=1 "${udp[@]}"
	GEN_PID=$LAST_PID
	wait_for 20 grep -q 'forwards packets on' "$logf" || die "generator did not start; see $logf"
}

# napi_defer sets the DUT's veths' napi_defer_hard_irqs and
# gro_flush_timeout (ns), which preferred busy polling wants: the kernel
# then leaves the NAPI to the busy-polling thread for that long.
napi_defer() {
	local i
	for i in "$IF_D0" "$IF_D1"; do
		inns "$NS_DUT" sh -c "echo $1 > /sys/class/net/$i/napi_defer_hard_irqs; echo $2 > /sys/class/net/$i/gro_flush_timeout"
	done
}

# start_dut brings one setup up and returns when it forwards.
start_dut() {
	local setup=$1 logf=$2
	shift 2
	DUT_PID="" DUT_SETUP=$setup
	inns "$NS_DUT" sysctl -qw net.ipv4.ip_forward=0
	local -a extra
	case $setup in
	tord | tord-adaptive | tord-busypoll | tord-netrt | tord-ecn)
		local poll=busy
		[ "$setup" != tord-adaptive ] || poll=adaptive
		read -r -a extra <<<"$TORD_ARGS"
		if [ "$setup" = tord-netrt ]; then
			# Flags override the file; the file holds what has no flag.
			printf 'ports: [%s, %s]\nxdp: {frames: 16384}\nnetrt: {fabric: [%s], pool_frames: 2048}\n' \
				"$IF_D0" "$IF_D1" "$IF_D1" >"$WORK/netrt.yaml"
			extra+=(--config "$WORK/netrt.yaml")
		fi
		if [ "$setup" = tord-ecn ]; then
			printf 'ports: [%s, %s]\necn:\n  profiles: {all: {min_threshold: 1, max_threshold: 2, probability: 100}}\n  queues: {control: all, retransmit: all, data: all, idle: all}\n' \
				"$IF_D0" "$IF_D1" >"$WORK/ecn.yaml"
			extra+=(--config "$WORK/ecn.yaml")
		fi
		if [ "$setup" = tord-busypoll ]; then
			printf 'ports: [%s, %s]\nxdp: {busy_poll: 50us, busy_poll_budget: 64}\n' "$IF_D0" "$IF_D1" >"$WORK/busypoll.yaml"
			extra+=(--config "$WORK/busypoll.yaml")
			napi_defer 2 200000
		fi
		start "$logf" ip netns exec "$NS_DUT" taskset -c "$DUT_CPU" "$WORK/tord" \
			--ports "$IF_D0,$IF_D1" --workers "$QUEUES" --poll "$poll" "${extra[@]}" "$@"
		DUT_PID=$LAST_PID
		wait_for 20 inns "$NS_DUT" curl -sf http://127.0.0.1:9478/readyz || die "tord did not become ready; see $logf"
		;;
	testpmd)
		local -a eal_args
		mapfile -t eal_args < <(eal "$DUT_CPU" d)
		read -r -a extra <<<"$TESTPMD_ARGS"
		start "$logf" ip netns exec "$NS_DUT" taskset -c "$DUT_CPU" dpdk-testpmd "${eal_args[@]}" \
			--vdev "net_af_xdp0,iface=$IF_D0${TESTPMD_VDEV:+,$TESTPMD_VDEV}" \
			--vdev "net_af_xdp1,iface=$IF_D1${TESTPMD_VDEV:+,$TESTPMD_VDEV}" -- \
			--nb-cores=1 --forward-mode=mac --total-num-mbufs=16384 \
			--eth-peer=0,"$MAC_G0" --eth-peer=1,"$MAC_S0" --stats-period=1 "${extra[@]}"
		DUT_PID=$LAST_PID
		wait_for 20 grep -q 'forwards packets on' "$logf" || die "testpmd (DUT) did not start; see $logf"
		;;
	kernel)
		inns "$NS_DUT" sysctl -qw net.ipv4.ip_forward=1
		;;
	xdp)
		# bpf_fib_lookup forwards only where the kernel would.
		inns "$NS_DUT" sysctl -qw net.ipv4.ip_forward=1
		ip -n "$NS_DUT" link set dev "$IF_D0" xdpdrv obj "$WORK/router.bpf.o" sec xdp
		;;
	esac
	pin_napi
}

stop_dut() {
	local setup=$1
	if [ -n "$DUT_PID" ]; then
		stop_pid "$DUT_PID"
	fi
	if [ "$setup" = xdp ]; then
		ip -n "$NS_DUT" link set dev "$IF_D0" xdp off
	fi
	[ "$setup" != tord-busypoll ] || napi_defer 0 0
	inns "$NS_DUT" sysctl -qw net.ipv4.ip_forward=0
	# Whatever a DUT left attached (a killed testpmd leaves libxdp's
	# program) must not meet the next one.
	local i out
	for i in "$IF_D0" "$IF_D1"; do
		out=$(ip -n "$NS_DUT" link show "$i")
		if [[ $out == *" xdp"* ]]; then
			log "$setup left an XDP program on $i; removing it"
			ip -n "$NS_DUT" link set dev "$i" xdp off
		fi
	done
}

now() { date +%s.%N; }

# nap sleeps in the background and waits for it: the wait builtin returns
# as soon as a trapped signal arrives, where a foreground sleep would hold
# the trap (and the cleanup) back until it ended.
nap() {
	sleep "$1" &
	NAP_PID=$!
	wait "$NAP_PID" || true
	NAP_PID=""
}

cpu_stat() { grep -E "^cpu($GEN_CPU|$DUT_CPU) " /proc/stat; }

# window counts frames at the sink and from the generator over DURATION
# seconds, and the two CPUs' time from /proc/stat. It sets WINDOW to
# "sink_pps offered_pps gen_busy% dut_user% dut_sys% dut_softirq% dut_idle%"
# (not printed: a command substitution would run the sleep in a subshell,
# out of reach of the INT trap).
window() {
	local s1 g1 t1 c1 s2 g2 t2 c2
	local per=""
	if [ "$QUEUES" -gt 1 ] && [ -n "${DUT_PID:-}" ] && [[ ${DUT_SETUP:-} == tord* ]]; then
		per=$WORK/workers
		inns "$NS_DUT" curl -sf http://127.0.0.1:9478/metrics >"$per.1" || true
	fi
	local perfpid=""
	if [ -n "$PERF" ] && [ -n "${PERF_TAG:-}" ]; then
		mkdir -p "$PERF"
		perf record -q -g -C "$DUT_CPU" -F 2999 -o "$PERF/$PERF_TAG.data" -- sleep "$DURATION" >/dev/null 2>&1 &
		perfpid=$!
	fi
	t1=$(now) s1=$(sink_count) g1=$(gen_count) c1=$(cpu_stat)
	if [ -n "${MID_SCRAPE:-}" ]; then
		# Half-way through, a scrape of tord's /metrics into MID_SCRAPE.
		nap "$(awk -v d="$DURATION" 'BEGIN { print d / 2 }')"
		inns "$NS_DUT" curl -sf http://127.0.0.1:9478/metrics >"$MID_SCRAPE" || true
		nap "$(awk -v d="$DURATION" 'BEGIN { print d / 2 }')"
	else
		nap "$DURATION"
	fi
	t2=$(now) s2=$(sink_count) g2=$(gen_count) c2=$(cpu_stat)
	if [ -n "$perfpid" ]; then
		wait "$perfpid" || true
		PERF_FRAMES=$((s2 - s1))
	fi
	WORKER_PPS=""
	if [ -n "$per" ]; then
		inns "$NS_DUT" curl -sf http://127.0.0.1:9478/metrics >"$per.2" || true
		local w a b
		for ((w = 0; w < QUEUES; w++)); do
			a=$(metric "$per.1" rocetor_worker_batch_size_sum "worker=\"$w\"")
			b=$(metric "$per.2" rocetor_worker_batch_size_sum "worker=\"$w\"")
			WORKER_PPS+="$(awk -v d="$((b - a))" -v t1="$t1" -v t2="$t2" 'BEGIN { printf "%.0f", d / (t2 - t1) }') "
		done
	fi
	WINDOW=$(printf '%s\n%s\n' "$c1" "$c2" | awk -v s="$((s2 - s1))" -v g="$((g2 - g1))" -v t1="$t1" -v t2="$t2" \
		-v gc="cpu$GEN_CPU" -v dc="cpu$DUT_CPU" '
		# user nice system idle iowait irq softirq steal
		{ n = ++seen[$1]; for (i = 2; i <= 9; i++) v[$1, n, i] = $i }
		function d(c, i) { return v[c, 2, i] - v[c, 1, i] }
		function tot(c,   i, t) { for (i = 2; i <= 9; i++) t += d(c, i); return t > 0 ? t : 1 }
		END {
			gt = tot(gc); dt = tot(dc)
			printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", s / (t2 - t1), g / (t2 - t1),
				100 * (gt - d(gc, 5) - d(gc, 6)) / gt,
				100 * (d(dc, 2) + d(dc, 3)) / dt, 100 * d(dc, 4) / dt,
				100 * (d(dc, 7) + d(dc, 8)) / dt, 100 * (d(dc, 5) + d(dc, 6)) / dt
		}')
}

measure() {
	local setup=$1 size=$2 r=$3 tag="$1-$2-r$3"
	log "$setup, $size B frames, run $r: warm-up ${WARMUP}s, measure ${DURATION}s"
	start_dut "$setup" "$WORK/$tag.dut.log"
	start_gen "$size" "$WORK/$tag.gen.log"
	nap "$WARMUP"
	pin_napi
	alive "$GEN_PID" || die "generator died; see $WORK/$tag.gen.log"
	PERF_TAG=$tag
	window
	PERF_TAG=""
	local res=$WINDOW
	if [ -n "$DUT_PID" ] && ! alive "$DUT_PID"; then
		die "$setup died during the run; see $WORK/$tag.dut.log"
	fi
	stop_pid "$GEN_PID"
	if [[ $setup == tord* ]]; then
		inns "$NS_DUT" curl -sf http://127.0.0.1:9478/metrics >"$WORK/$tag.metrics" || true
	fi
	stop_dut "$setup"
	local sink gen gbusy usr sys soft idle
	read -r sink gen gbusy usr sys soft idle <<<"$res"
	PPS[$setup,$size]+="$sink "
	OFFERED[$setup,$size]+="$gen "
	CPU[$setup,$size]="$gbusy $usr $sys $soft $idle"
	WORKERS[$setup,$size]=$WORKER_PPS
	if [ -n "$PERF" ] && [ -s "$PERF/$tag.data" ]; then
		# The DUT's threads by name: tord's, testpmd's lcore and
		# interrupt threads; the ingress NAPI thread counts as receive.
		perf script -i "$PERF/$tag.data" -F comm,tid,ip,sym 2>/dev/null |
			python3 "$ROOT/scripts/bench-forward/perf-breakdown.py" --hz 2999 --frames "$PERF_FRAMES" \
				--dut tord,dpdk-testpmd,rte-worker-1,eal-intr-thread >"$PERF/$tag.md" ||
			log "  perf breakdown failed; the profile is $PERF/$tag.data"
		log "  where the DUT's CPU went per forwarded frame: $PERF/$tag.md"
	fi
	log "  sink $(fmt_pps "$sink") pps, generator $(fmt_pps "$gen") pps; CPU $GEN_CPU (generator) ${gbusy}% busy; CPU $DUT_CPU (DUT) user ${usr}%, system ${sys}%, softirq ${soft}%, idle ${idle}%"
	if [ "$setup" = tord-netrt ]; then
		# Proof that the pool worked: what it took in and gave up.
		local m=$WORK/$tag.metrics
		log "  NetRT pool: $(fmt_pps "$(metric "$m" rocetor_netrt_pool_admitted_total)") duplicates admitted, $(fmt_pps "$(metric "$m" rocetor_netrt_pool_retired_total 'cause="lfu"')") evicted (LFU), $(fmt_pps "$(metric "$m" rocetor_netrt_pool_retired_total 'cause="age"')") expired"
	fi
}

# metric sums every sample of a Prometheus metric in a scrape, optionally
# only those whose labels match a regular expression.
metric() {
	awk -v name="$2" -v re="${3:-}" '
		{ split($1, p, "{") }
		p[1] == name && (re == "" || $1 ~ re) { s += $NF }
		END { printf "%.0f\n", s }' "$1"
}

rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

overload() {
	local size=$OVERLOAD_SIZE f=$WORK/overload
	log "overload: tord shaped to $OVERLOAD_RATE, $size B frames for ${DURATION}s"
	start_dut tord "$f.dut.log" --rate "$OVERLOAD_RATE"
	inns "$NS_DUT" curl -sf http://127.0.0.1:9478/metrics >"$f.before"
	OV_RSS0=$(rss_kib "$DUT_PID")
	start_gen "$size" "$f.gen.log"
	MID_SCRAPE=$f.during
	window
	MID_SCRAPE=""
	local res=$WINDOW
	stop_pid "$GEN_PID"
	nap 1 # let the shaper drain what is queued
	alive "$DUT_PID" || die "tord died in the overload run; see $f.dut.log"
	inns "$NS_DUT" curl -sf http://127.0.0.1:9478/metrics >"$f.after"
	OV_RSS1=$(rss_kib "$DUT_PID")
	stop_dut tord
	read -r OV_SINK OV_GEN _ <<<"$res"
}

profile() {
	local size=$1 f=$WORK/profile
	log "profile: tord at $size B, 5 s CPU profile after ${WARMUP}s of traffic"
	start_dut tord "$f.dut.log"
	start_gen "$size" "$f.gen.log"
	nap "$WARMUP"
	pin_napi
	if ! inns "$NS_DUT" curl -sf -o "$WORK/profile.pprof" "http://127.0.0.1:9479/debug/pprof/profile?seconds=5"; then
		log "could not fetch the profile from tord's admin listener; going on without it"
	fi
	stop_pid "$GEN_PID"
	stop_dut tord
	if [ -s "$WORK/profile.pprof" ] && cp "$WORK/profile.pprof" "$PROFILE"; then
		(cd "$ROOT" && "$GO" tool pprof -top -nodecount=25 "$WORK/tord" "$PROFILE") >"$f.top" 2>&1 || true
	fi
}

median() { tr ' ' '\n' | awk 'NF' | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | awk 'NF' | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 1) printf " (%.2f–%.2f M)", lo / 1e6, hi / 1e6 }'; }
# fmt_pps groups digits by thousands: 1234567 → 1,234,567.
fmt_pps() {
	awk -v v="$1" 'BEGIN {
		if (v == "") { print "–"; exit }
		s = sprintf("%.0f", v); neg = s ~ /^-/; sub(/^-/, "", s)
		while (s ~ /[0-9][0-9][0-9][0-9]/) { sub(/[0-9][0-9][0-9]($|,)/, ",&", s) }
		print (neg ? "-" : "") s }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f\n", a / b }'; }

report() {
	local load_start=$1 load_end=$2 size setup
	echo "## Forwarding throughput"
	echo
	echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs, Linux $(uname -r), $("$GO" version | cut -d' ' -f3),"
	local rev dpdk
	rev=$(git -c safe.directory="$ROOT" -C "$ROOT" describe --always --dirty 2>/dev/null || echo "(not a git checkout)")
	# shellcheck disable=SC2016 # ${Version} is dpkg-query's, not the shell's
	dpdk=$(dpkg-query -W -f '${Version}' dpdk-dev 2>/dev/null || echo "(version unknown)")
	echo "rocetor $rev, DPDK $dpdk, generator $GEN."
	if [[ " $SETUPS " == *" testpmd "* ]]; then
		echo "tord flags: --workers $QUEUES${TORD_ARGS:+ $TORD_ARGS}; DUT testpmd: --forward-mode=mac${TESTPMD_ARGS:+ $TESTPMD_ARGS}${TESTPMD_VDEV:+, net_af_xdp $TESTPMD_VDEV}."
	else
		echo "tord flags: --workers $QUEUES${TORD_ARGS:+ $TORD_ARGS}; $QUEUES queue(s) per veth."
	fi
	if [ "$ROCE" = 1 ]; then
		echo "Traffic: RoCEv2 frames (UDP 4791, a zero BTH: RC SEND First, PSN 0, QP 0)."
	else
		echo "Traffic: UDP frames to port 9."
	fi
	echo "Generator on CPU $GEN_CPU, DUT on CPU $DUT_CPU, veth receive at the DUT on the $RX_ON CPU;"
	echo "${DURATION} s per setup after ${WARMUP} s of warm-up, median of $REPEAT run(s). Load average $load_start at the start, $load_end at the end."
	echo
	printf '| setup |'
	for size in $SIZES; do printf ' %s B: sink pps | %s B: generator pps |' "$size" "$size"; done
	echo
	printf '| --- |'
	for size in $SIZES; do printf ' ---: | ---: |'; done
	echo
	local wn="1 worker"
	[ "$QUEUES" = 1 ] || wn="$QUEUES workers"
	local -A name=([tord]="tord ($wn, --poll busy)" [tord-adaptive]="tord ($wn, --poll adaptive)"
		[tord-netrt]="tord with NetRT, every frame pooled ($wn, --poll busy)" [testpmd]="dpdk-testpmd mac (net_af_xdp)"
		[tord-ecn]="tord with ECN marking on every queue ($wn, --poll busy)"
		[tord-busypoll]="tord with preferred busy polling ($wn, --poll busy)"
		[kernel]="kernel IP forwarding" [xdp]="XDP router (bpf_fib_lookup + redirect)")
	declare -gA MED
	for setup in $SETUPS; do
		printf '| %s |' "${name[$setup]}"
		for size in $SIZES; do
			MED[$setup,$size]=$(median <<<"${PPS[$setup,$size]:-}")
			printf ' %s%s | %s |' "$(fmt_pps "${MED[$setup,$size]}")" "$(spread <<<"${PPS[$setup,$size]:-}")" \
				"$(fmt_pps "$(median <<<"${OFFERED[$setup,$size]:-}")")"
		done
		echo
	done
	local pair
	local x y
	for pair in "tord testpmd" "tord-adaptive testpmd" "tord-busypoll tord" "tord-netrt tord" "tord-ecn tord" "tord xdp" "tord-busypoll xdp" "testpmd xdp"; do
		read -r x y <<<"$pair"
		[[ " $SETUPS " == *" $x "* && " $SETUPS " == *" $y "* ]] || continue
		printf '| **%s / %s** |' "$x" "$y"
		for size in $SIZES; do printf ' **%s** | |' "$(ratio "${MED[$x,$size]}" "${MED[$y,$size]}")"; done
		echo
	done
	echo
	echo "Sink pps: frames the sink's XDP program counted and dropped per second. Generator pps: frames the"
	echo "generator's veth sent per second; where it is close to the sink's figure the generator, not the"
	echo "DUT, was the limit. Frame sizes exclude the FCS."
	if [ "$RX_ON" = gen ]; then
		echo "With --rx-on gen the kernel and xdp setups forward in the generator's softirq, on the"
		echo "generator's CPU: their rows and ratios are not comparable to the AF_XDP setups."
	fi
	echo
	echo "Where the time went during the last measured run of each setup (/proc/stat; the DUT's CPU also"
	echo "runs the sink's XDP program, in the softirq of whatever transmits into the sink):"
	echo
	echo "| setup | frame | generator CPU busy | DUT CPU user | system | softirq | idle | DUT CPU ns per forwarded frame |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	local gbusy usr sys soft idle last
	for setup in $SETUPS; do
		for size in $SIZES; do
			read -r gbusy usr sys soft idle <<<"${CPU[$setup,$size]:-}"
			last=$(tr ' ' '\n' <<<"${PPS[$setup,$size]:-}" | awk 'NF' | tail -1)
			printf '| %s | %s B | %s%% | %s%% | %s%% | %s%% | %s%% | %s |\n' "$setup" "$size" "$gbusy" "$usr" "$sys" "$soft" "$idle" \
				"$(awk -v i="$idle" -v p="$last" 'BEGIN { if (p > 0) printf "%.0f", (100 - i) * 1e7 / p; else print "–" }')"
		done
	done
	if [ "$QUEUES" -gt 1 ]; then
		echo
		echo "Frames each tord worker received per second in the last measured run (rocetor_worker_batch_size_sum):"
		echo
		local w row
		printf '| setup | frame |'
		for ((w = 0; w < QUEUES; w++)); do printf ' worker %d |' "$w"; done
		echo
		printf '| --- | ---: |'
		for ((w = 0; w < QUEUES; w++)); do printf ' ---: |'; done
		echo
		for setup in $SETUPS; do
			[[ $setup == tord* ]] || continue
			for size in $SIZES; do
				printf '| %s | %s B |' "$setup" "$size"
				for row in ${WORKERS[$setup,$size]:-}; do printf ' %s |' "$(fmt_pps "$row")"; done
				echo
			done
		done
	fi
	if [ -n "${OV_SINK:-}" ]; then
		echo
		overload_report
	fi
	if [ -n "$PROFILE" ] && [ -f "$WORK/profile.top" ]; then
		echo
		echo "### CPU profile of tord at ${SIZES%% *} B ($PROFILE)"
		echo
		echo '```'
		sed -n '1,40p' "$WORK/profile.top"
		echo '```'
	fi
}

overload_report() {
	local before=$WORK/overload.before after=$WORK/overload.after
	local rx tx drops queued qdrops maxd lim xdpdrop balance depth_ok=1 line
	rx=$(metric "$after" rocetor_port_rx_packets_total)
	tx=$(metric "$after" rocetor_port_tx_packets_total)
	drops=$(metric "$after" rocetor_drops_total)
	queued=$(metric "$after" rocetor_queue_depth_packets)
	qdrops=$(($(metric "$after" rocetor_queue_drops_total) - $(metric "$before" rocetor_queue_drops_total)))
	xdpdrop=$(($(metric "$after" rocetor_port_xdp_rx_dropped_total) - $(metric "$before" rocetor_port_xdp_rx_dropped_total)))
	maxd=$(metric "$after" rocetor_queue_max_depth_bytes "port=\"$IF_D1\",queue=\"data\"")
	lim=$(metric "$after" rocetor_queue_limit_bytes "port=\"$IF_D1\",queue=\"data\"")
	balance=$((rx - tx - drops - queued))
	echo "### Overload: tord shaped to $OVERLOAD_RATE, ${OVERLOAD_SIZE} B frames for ${DURATION} s"
	echo
	echo "| | |"
	echo "| --- | ---: |"
	echo "| generator | $(fmt_pps "$OV_GEN") pps ($(awk -v p="$OV_GEN" -v s="$OVERLOAD_SIZE" 'BEGIN { printf "%.2f", p * s * 8 / 1e9 }') Gb/s) |"
	echo "| forwarded to the sink | $(fmt_pps "$OV_SINK") pps ($(awk -v p="$OV_SINK" -v s="$OVERLOAD_SIZE" 'BEGIN { printf "%.2f", p * s * 8 / 1e9 }') Gb/s) |"
	echo "| max depth of $IF_D1/data (rocetor_queue_max_depth_bytes) | $(fmt_pps "$maxd") B |"
	echo "| its limit (rocetor_queue_limit_bytes) | $(fmt_pps "$lim") B |"
	# Every queue, not only the one the traffic used, must respect its limit.
	while read -r line; do
		local key=${line%% *} m l
		m=${line##* }
		l=$(awk -v k="rocetor_queue_limit_bytes{${key#*\{}" '$1 == k { print $2 }' "$after")
		if awk -v m="$m" -v l="$l" 'BEGIN { exit !(m > l) }'; then
			echo "| **depth above limit** ${key#*\{} | $m > $l |"
			depth_ok=0
		fi
	done < <(grep '^rocetor_queue_max_depth_bytes{' "$after")
	echo "| rocetor_queue_drops_total (during the run) | $(fmt_pps "$qdrops") |"
	while read -r line; do
		local reason=${line#*reason=\"} v0 v1
		reason=${reason%%\"*}
		v1=$(metric "$after" rocetor_drops_total "reason=\"$reason\"")
		v0=$(metric "$before" rocetor_drops_total "reason=\"$reason\"")
		if [ "$v1" != 0 ]; then
			echo "| rocetor_drops_total{reason=\"$reason\"} (total; during the run) | $(fmt_pps "$v1"); $(fmt_pps $((v1 - v0))) |"
		fi
	done < <(grep '^rocetor_drops_total{' "$after")
	echo "| dropped by the kernel before tord (AF_XDP rx ring or fill ring full) | $(fmt_pps "$xdpdrop") |"
	local mrx=0 mtx=0 mdrops=0 mqueued=0 mbalance=0 during=$WORK/overload.during
	if [ -s "$during" ]; then
		mrx=$(metric "$during" rocetor_port_rx_packets_total)
		mtx=$(metric "$during" rocetor_port_tx_packets_total)
		mdrops=$(metric "$during" rocetor_drops_total)
		mqueued=$(metric "$during" rocetor_queue_depth_packets)
		mbalance=$((mrx - mtx - mdrops - mqueued))
		echo "| tord's counters half-way: rx = tx + drops + queued | $(fmt_pps "$mrx") = $(fmt_pps "$mtx") + $(fmt_pps "$mdrops") + $(fmt_pps "$mqueued") $([ "$mbalance" = 0 ] && echo "✓" || echo "**off by $mbalance**") |"
	fi
	echo "| tord's counters after: rx = tx + drops + queued | $(fmt_pps "$rx") = $(fmt_pps "$tx") + $(fmt_pps "$drops") + $(fmt_pps "$queued") $([ "$balance" = 0 ] && echo "✓" || echo "**off by $balance**") |"
	echo "| tord RSS (VmRSS) before → after | $(fmt_pps "$OV_RSS0") KiB → $(fmt_pps "$OV_RSS1") KiB ($(awk -v a="$OV_RSS0" -v b="$OV_RSS1" 'BEGIN { printf "%+.1f%%", (b - a) * 100 / a }')) |"
	local fail=()
	[ "$depth_ok" = 1 ] && awk -v m="$maxd" -v l="$lim" 'BEGIN { exit !(m <= l) }' || fail+=("a queue's max depth exceeded its limit")
	[ "$balance" = 0 ] || fail+=("tord's counters do not balance: rx $rx ≠ tx $tx + drops $drops + queued $queued (off by $balance)")
	[ -s "$during" ] || fail+=("no scrape of tord's /metrics half-way through the run")
	[ "$mbalance" = 0 ] || fail+=("tord's counters half-way do not balance: rx $mrx ≠ tx $mtx + drops $mdrops + queued $mqueued (off by $mbalance)")
	[ "$qdrops" -gt 0 ] || fail+=("no queue drops: the generator did not overload the shaped port (raise the rate gap)")
	if [ ${#fail[@]} -gt 0 ]; then
		echo
		local f
		for f in "${fail[@]}"; do
			echo "**FAIL: $f**"
			log "FAIL: $f"
		done
		OVERLOAD_FAILED=1
	else
		echo
		echo "Checks passed: every queue stayed within its limit and rx = tx + drops + queued."
	fi
}

main "$@"
