#!/usr/bin/env bash
# soak.sh — the chain testbed under load and attack for a long while
# (project issue 20). It brings up `testbed up chain` with NetRT on the
# ToRs, llr on the switch-to-switch links, some loss at core (so both
# recover all along) and --trust (each switch knows its host ports and
# honours PFC from switches only), then runs at once, for --duration:
#
#   - roceperf WRITE runs h1 → h2, one after the other: each verifies
#     every byte at the server; runs, failures and bytes are counted;
#   - an iperf3 TCP stream h1 → h2, paced;
#   - `testbed blast` on h1 (victim h2) and on h2 (victim h1): random
#     bytes at UDP 4791, truncated headers, forged NetRT requests and
#     notices, llr shim frames, DCP header-only packets with payload, PFC
#     and PAUSE storms, paced to --rate frames/s in all.
#
# Every --interval it prints each tord's RSS (/proc/PID/status VmRSS) and
# its drop reasons. At the end it writes OUT/summary.json and fails
# (exit 1) on
#   - a tord that died (crash);
#   - a memory trend: after a warm-up (--warmup), the mean anonymous RSS
#     (RssAnon) of the last third of a switch's samples exceeds the first
#     third's by more than --trend-pct percent and --trend-mib MiB.
#     Anonymous memory is what a leak grows: tord's UMEM (32 or 64 MiB,
#     populated at start), its Go heap, which the GC keeps within about
#     twice its live size, and stacks; a healthy switch levels off after
#     its first seconds, and moves by a few MiB with GC timing. VmRSS also
#     counts the binary's pages as code paths run for the first time,
#     bounded by its size, so it is reported, not judged. A leak of 100
#     bytes per forged frame at 1,000 frames/s adds 60 MB in ten minutes,
#     well past both bounds;
#   - a roceperf run that failed or did not verify every byte it sent.
# The testbed is always torn down (trap), and nothing else is touched.
#
# usage: sudo scripts/soak.sh [--duration 10m] [--rate 2000] [--out DIR]
#          [--loss 0.001] [--llr blocking|nb] [--tcp-rate 100M]
#          [--roce-rate 300M] [--size 1MiB] [--count 8] [--interval 30]
#          [--prefix rtb-soak-] [--no-build] [--no-trust]
# --no-trust leaves the switches' trust sections out: PFC from the hosts
# is honoured, and the blasters' storms pause the host ports.
# GO=... selects the go tool for `make build`.
set -euo pipefail

DURATION=10m
RATE=2000          # forged frames/s, both blasters together; 0: none (a control run)
OUT=
LOSS=0.001         # at core's link with tor2, both ways
LLR=blocking
TCP_RATE=100M      # iperf3 -b
ROCE_RATE=300M     # roceperf --rate of each run
SIZE=1MiB
COUNT=8
INTERVAL=30
# Seconds of samples the trend leaves out. In trial runs anonymous RSS
# rose for about two minutes (the Go heap's spans growing to its GC goal,
# about twice the live heap, as every code path ran) and was flat after.
WARMUP=120
TREND_PCT=10
TREND_MIB=8
PREFIX=rtb-soak-
BUILD=1
TRUST=--trust
STATE_DIR=/run/rocetor-testbed

while [ $# -gt 0 ]; do
	case $1 in
	--duration) DURATION=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--loss) LOSS=$2; shift 2 ;;
	--llr) LLR=$2; shift 2 ;;
	--tcp-rate) TCP_RATE=$2; shift 2 ;;
	--roce-rate) ROCE_RATE=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--count) COUNT=$2; shift 2 ;;
	--interval) INTERVAL=$2; shift 2 ;;
	--warmup) WARMUP=$2; shift 2 ;;
	--trend-pct) TREND_PCT=$2; shift 2 ;;
	--trend-mib) TREND_MIB=$2; shift 2 ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--no-build) BUILD=0; shift ;;
	--no-trust) TRUST=; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

# Every value is checked before anything starts: a soak that runs for
# ten minutes and then fails in its summary on a value it took at the
# start helps nobody.
bad() { echo "soak.sh: $1" >&2; exit 2; }
uint() { [[ $2 =~ ^[0-9]+$ ]] || bad "$1 $2: want a whole number"; }
# Seconds of a whole-second duration: 90, 90s, 10m, 1h.
secs() {
	[[ $2 =~ ^([0-9]+)([smh]?)$ ]] || bad "$1 $2: want seconds, or a whole number with s, m or h (90, 90s, 10m, 1h)"
	case ${BASH_REMATCH[2]} in
	h) echo $(( BASH_REMATCH[1] * 3600 )) ;;
	m) echo $(( BASH_REMATCH[1] * 60 )) ;;
	*) echo "${BASH_REMATCH[1]}" ;;
	esac
}
SECS=$(secs --duration "$DURATION") || exit 2
WARMUP=$(secs --warmup "$WARMUP") || exit 2
INTERVAL=$(secs --interval "$INTERVAL") || exit 2
[ "$SECS" -gt 0 ] || bad "--duration $DURATION: want more than 0"
[ "$INTERVAL" -gt 0 ] || bad "--interval $INTERVAL: want more than 0"
[ "$WARMUP" -lt "$SECS" ] || bad "--warmup ${WARMUP}s: want less than --duration (${SECS}s), or no sample would be judged"
uint --rate "$RATE"
uint --count "$COUNT"
uint --trend-pct "$TREND_PCT"
uint --trend-mib "$TREND_MIB"
[[ $LOSS =~ ^(0(\.[0-9]+)?|\.[0-9]+|[0-9.]+e-[0-9]+)$ ]] || bad "--loss $LOSS: want a probability below 1, e.g. 0.001 or 1e-3"
case $LLR in blocking | nb) ;; *) bad "--llr $LLR: want blocking or nb" ;; esac
for v in "--tcp-rate $TCP_RATE" "--roce-rate $ROCE_RATE"; do
	[[ ${v#* } =~ ^[0-9]+(\.[0-9]+)?[KMG]?$ ]] || bad "$v: want a rate such as 100M or 1G"
done
[[ $SIZE =~ ^[0-9]+([KMG]i?B?)?$ ]] || bad "--size $SIZE: want bytes, e.g. 65536 or 1MiB"
[[ $PREFIX =~ ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}-$ ]] || bad "--prefix $PREFIX: want letters, digits, '_', '.' or '-', ending in '-'"

[ "$(id -u)" = 0 ] || { echo "soak.sh: needs root (namespaces, XDP): sudo $0" >&2; exit 2; }
for t in jq curl iperf3 ip; do
	command -v $t >/dev/null || { echo "soak.sh: needs $t" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/soak-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$ROOT/bin
STATE=$STATE_DIR/${PREFIX%-}.json
H1=${PREFIX}h1
H2=${PREFIX}h2

log() { echo "soak: $(date -u +%H:%M:%S) $*"; }

PIDS=()
cleanup() {
	set +e
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 1
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -e "$STATE" ] || ip netns list | grep -q "^$PREFIX"; then
		log "tearing down $PREFIX"
		"$BIN/testbed" down --prefix "$PREFIX" >"$OUT/down.log" 2>&1 || cat "$OUT/down.log"
	fi
	if ip netns list | grep -q "^$PREFIX"; then
		log "namespaces left: $(ip netns list | grep "^$PREFIX" | tr '\n' ' ')"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$BUILD" = 1 ]; then
	log "make build"
	make -s build GO="${GO:-go}"
fi

log "testbed up chain --netrt --llr $LLR --loss $LOSS $TRUST (prefix $PREFIX)"
"$BIN/testbed" up chain --prefix "$PREFIX" --bin "$BIN" --netrt --llr "$LLR" --loss "$LOSS" $TRUST \
	>"$OUT/up.log" 2>&1 || { cat "$OUT/up.log"; exit 1; }
cp "$STATE" "$OUT/state.json"
SWITCHES=$(jq -r '.switches | keys[]' "$STATE" | sort)
pid_of() { jq -r --arg n "$1" '.switches[$n].pid' "$STATE"; }
ns_of() { jq -r --arg n "$1" '.switches[$n].netns' "$STATE"; }
url_of() { jq -r --arg n "$1" '.switches[$n].metrics_url' "$STATE"; }
addr_of() { jq -r --arg n "$1" '.plan.links[] | (.a, .b) | select(.node == $n) | .v4' "$STATE" | head -1 | cut -d/ -f1; }
H2ADDR=$(addr_of h2)
scrape() { ip netns exec "$(ns_of "$1")" curl -s --max-time 5 "$(url_of "$1")"; }

: >"$OUT/roceperf-runs.jsonl"
START=$(date +%s)
END=$((START + SECS))

# roceperf: a server loop on h2, WRITE runs from h1 until the end.
ip netns exec "$H2" "$BIN/roceperf" serve --dev eth0 --listen "$H2ADDR:18515" >"$OUT/roceperf-server.log" 2>&1 &
PIDS+=($!)
ip netns exec "$H2" iperf3 -s -1 -p 5201 >"$OUT/iperf3-server.log" 2>&1 &
PIDS+=($!)
sleep 1
(
	i=0
	while [ "$(date +%s)" -lt "$END" ]; do
		i=$((i + 1))
		rc=0
		line=$(ip netns exec "$H1" "$BIN/roceperf" write --dev eth0 --to "$H2ADDR" --size "$SIZE" --count "$COUNT" \
			--rate "$ROCE_RATE" --timeout 10s --json 2>>"$OUT/roceperf-client.log" | tail -1) || rc=$?
		[ -n "$line" ] || line='{}'
		echo "$line" | jq -c --argjson run "$i" --argjson rc "$rc" --argjson t "$(( $(date +%s) - START ))" \
			'{run: $run, rc: $rc, t: $t, bytes: (.bytes // 0), verified_bytes: (.verified_bytes // 0), corrupt: (.corrupt // 0),
			  messages: (.messages // 0), goodput_gbps: (.goodput_gbps // 0), retx_packets: (.retx_packets // 0),
			  timeouts: (.timeouts // 0)}' >>"$OUT/roceperf-runs.jsonl" 2>/dev/null ||
			echo "{\"run\": $i, \"rc\": $rc, \"bytes\": 0, \"verified_bytes\": 0, \"corrupt\": 0, \"unparsed\": true}" >>"$OUT/roceperf-runs.jsonl"
	done
) &
PIDS+=($!)
ROCE_LOOP=$!
ip netns exec "$H1" iperf3 -c "$H2ADDR" -p 5201 -t "$SECS" -b "$TCP_RATE" -J >"$OUT/iperf3.json" 2>"$OUT/iperf3-client.log" &
PIDS+=($!)
IPERF=$!
BLASTERS=
if [ "$RATE" -gt 0 ]; then
	"$BIN/testbed" blast --prefix "$PREFIX" --from h1 --to h2 --rate $((RATE / 2)) --duration "${SECS}s" --seed 1 \
		>"$OUT/blast-h1.json" 2>"$OUT/blast-h1.log" &
	PIDS+=($!)
	BLAST1=$!
	"$BIN/testbed" blast --prefix "$PREFIX" --from h2 --to h1 --rate $((RATE - RATE / 2)) --duration "${SECS}s" --seed 2 \
		>"$OUT/blast-h2.json" 2>"$OUT/blast-h2.log" &
	PIDS+=($!)
	BLAST2=$!
	BLASTERS="$BLAST1 $BLAST2"
else
	echo '{"sent": 0}' >"$OUT/blast-h1.json"
	echo '{"sent": 0}' >"$OUT/blast-h2.json"
fi
log "running ${SECS}s: roceperf WRITE $COUNT × $SIZE at $ROCE_RATE per run, iperf3 at $TCP_RATE, blasters at $RATE frames/s; output in $OUT"

# Samples: t, switch, pid alive, RSS in KiB, CPU seconds so far (user
# and system, from /proc/PID/stat), and from its metrics the Go heap in
# use (KiB) and goroutines: RSS also grows as UMEM pages are first
# touched, the heap does not. Each sample's scrape is kept in
# OUT/scrapes/NODE-T.txt.
TCK=$(getconf CLK_TCK)
mkdir -p "$OUT/scrapes"
echo -e "t\tswitch\talive\trss_kib\tcpu_s\theap_kib\tgoroutines\tanon_kib" >"$OUT/rss.tsv"
sample() {
	local t=$(( $(date +%s) - START )) line="" n pid rss alive drops cpu m heap gr anon
	for n in $SWITCHES; do
		pid=$(pid_of "$n")
		if [ -r "/proc/$pid/status" ]; then
			alive=1
			rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
			anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status")
			cpu=$(awk -v tck="$TCK" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / tck}' "/proc/$pid/stat")
		else
			alive=0 rss=0 cpu=0 anon=0
		fi
		m=$(scrape "$n" 2>/dev/null || true)
		echo "$m" >"$OUT/scrapes/$n-$(printf %04d "$t").txt"
		heap=$(awk '/^go_memstats_heap_inuse_bytes / {printf "%d", $2 / 1024}' <<<"$m")
		gr=$(awk '/^go_goroutines / {print $2}' <<<"$m")
		echo -e "$t\t$n\t$alive\t$rss\t$cpu\t${heap:-0}\t${gr:-0}\t$anon" >>"$OUT/rss.tsv"
		line+=" $n=$((rss / 1024))/$((anon / 1024))/$(( ${heap:-0} / 1024 ))MiB"
		[ "$alive" = 1 ] || line+="(DEAD)"
	done
	log "t=${t}s RSS/anon/Go heap in use$line"
	for n in $SWITCHES; do
		drops=$(scrape "$n" 2>/dev/null | awk '/^rocetor_drops_total\{/ && $2 > 0 {
			match($0, /reason="[^"]*"/); r = substr($0, RSTART + 8, RLENGTH - 9); printf " %s=%d", r, $2 }')
		log "    $n drops:${drops:- none}"
	done
}
sample
while :; do
	now=$(date +%s)
	[ "$now" -lt "$END" ] || break
	sleep $(( INTERVAL < END - now ? INTERVAL : END - now ))
	sample
done

log "the end: waiting for the last roceperf run, iperf3 and the blasters"
for p in $ROCE_LOOP $IPERF $BLASTERS; do
	wait "$p" || true
done
for n in $SWITCHES; do
	scrape "$n" >"$OUT/metrics-$n.txt" 2>/dev/null || true
done
sample

# The verdict.
jq -n \
	--arg duration "$DURATION" --argjson secs "$SECS" --argjson rate "$RATE" --arg loss "$LOSS" --arg llr "$LLR" --arg trust "$TRUST" \
	--arg tcp_rate "$TCP_RATE" --arg roce_rate "$ROCE_RATE" --arg size "$SIZE" --argjson count "$COUNT" \
	--argjson warmup "$WARMUP" --argjson trend_pct "$TREND_PCT" --argjson trend_mib "$TREND_MIB" \
	--arg kernel "$(uname -r)" --argjson nproc "$(nproc)" --arg date "$(date -u -d @"$START" +%Y-%m-%dT%H:%M:%SZ)" \
	--rawfile rss "$OUT/rss.tsv" --slurpfile runs "$OUT/roceperf-runs.jsonl" \
	--slurpfile b1 "$OUT/blast-h1.json" --slurpfile b2 "$OUT/blast-h2.json" \
	--slurpfile iperf <(cat "$OUT/iperf3.json" 2>/dev/null || echo '{}') \
	--rawfile m_core "$OUT/metrics-core.txt" --rawfile m_tor1 "$OUT/metrics-tor1.txt" --rawfile m_tor2 "$OUT/metrics-tor2.txt" '
	def mean: if length == 0 then 0 else add / length end;
	def series($prefix): split("\n") | map(select(startswith($prefix)) | capture("^(?<name>[a-z_]+)(\\{(?<labels>[^}]*)\\})? (?<v>[0-9.e+-]+)$")?)
		| map(select(.v | tonumber > 0) | {key: ((.labels // "") | gsub("\""; "")), value: (.v | tonumber)}) | from_entries;
	($rss | split("\n")[1:] | map(select(length > 0) | split("\t") | {t: (.[0] | tonumber), sw: .[1], alive: (.[2] == "1"), kib: (.[3] | tonumber), cpu: (.[4] | tonumber), heap: (.[5] | tonumber), gr: (.[6] | tonumber), anon: (.[7] | tonumber)})) as $s
	| ($s | group_by(.sw) | map(
		. as $all | ($all | map(select(.t >= $warmup and .alive))) as $w
		| (($w | length) / 3 | floor) as $third
		| ($w[:$third] | map(.anon) | mean) as $first | ($w[($w | length) - $third:] | map(.anon) | mean) as $last
		| {key: $all[0].sw, value: {
			samples: ($all | length), died: ($all | any(.alive | not)),
			cpu_pct: (if ($all[-1].t > $all[0].t) then 100 * ($all[-1].cpu - $all[0].cpu) / ($all[-1].t - $all[0].t) else 0 end),
			rss_mib: {first: ($all[0].kib / 1024), last: ($all[-1].kib / 1024), max: (($all | map(.kib) | max) / 1024),
				first_third_mean: (($w[:$third] | map(.kib) | mean) / 1024),
				last_third_mean: (($w[($w | length) - $third:] | map(.kib) | mean) / 1024)},
			anon_mib: {first: ($all[0].anon / 1024), last: ($all[-1].anon / 1024), max: (($all | map(.anon) | max) / 1024),
				first_third_mean: ($first / 1024), last_third_mean: ($last / 1024)},
			heap_mib: {first: ($all[0].heap / 1024), last: ($all[-1].heap / 1024), max: (($all | map(.heap) | max) / 1024),
				first_third_mean: (($w[:$third] | map(.heap) | mean) / 1024),
				last_third_mean: (($w[($w | length) - $third:] | map(.heap) | mean) / 1024)},
			goroutines: {first: $all[0].gr, last: $all[-1].gr, max: ($all | map(.gr) | max)},
			trend: ($third > 0 and $last > $first * (1 + $trend_pct / 100) and ($last - $first) > $trend_mib * 1024)}}
	) | from_entries) as $sw
	| ($runs | map(select(.rc != 0 or .messages != $count or .bytes == 0 or .verified_bytes != .bytes or .corrupt != 0))) as $bad
	| {
		date: $date, kernel: $kernel, nproc: $nproc, duration: $duration, seconds: $secs,
		testbed: {topology: "chain", netrt: true, llr: $llr, loss: ($loss | tonumber), trust: ($trust != "")},
		blaster: {rate: $rate, h1: $b1[0], h2: $b2[0]},
		switches: $sw,
		roce: {op: "write", size: $size, count: $count, rate: $roce_rate, runs: ($runs | length), failed: ($bad | length),
			bytes: ($runs | map(.bytes) | add // 0), verified_bytes: ($runs | map(.verified_bytes) | add // 0),
			retx_packets: ($runs | map(.retx_packets // 0) | add // 0), timeouts: ($runs | map(.timeouts // 0) | add // 0),
			failures: $bad},
		tcp: {rate: $tcp_rate, seconds: ($iperf[0].end.sum_received.seconds // 0),
			received_mbps: (($iperf[0].end.sum_received.bits_per_second // 0) / 1e6),
			retransmits: ($iperf[0].end.sum_sent.retransmits // 0), error: ($iperf[0].error // null)},
		drops: {tor1: ($m_tor1 | series("rocetor_drops_total")), core: ($m_core | series("rocetor_drops_total")),
			tor2: ($m_tor2 | series("rocetor_drops_total"))},
		trust_refused: {tor1: ($m_tor1 | series("rocetor_trust_refused_total")), core: ($m_core | series("rocetor_trust_refused_total")),
			tor2: ($m_tor2 | series("rocetor_trust_refused_total"))},
		pfc_refused: {tor1: ($m_tor1 | series("rocetor_port_pfc_refused_frames_total")), core: ($m_core | series("rocetor_port_pfc_refused_frames_total")),
			tor2: ($m_tor2 | series("rocetor_port_pfc_refused_frames_total"))}
	}
	| .failed = ([(if ($sw | to_entries | any(.value.died)) then "crash" else empty end),
		(if ($sw | to_entries | any(.value.trend)) then "memory trend" else empty end),
		(if .roce.runs == 0 or .roce.failed > 0 then "unverified RoCE bytes" else empty end)])
	| .pass = (.failed | length == 0)
' >"$OUT/summary.json"

jq -r '
	"soak: \(.date), \(.seconds) s, kernel \(.kernel), \(.nproc) CPUs; blaster \(.blaster.rate) frames/s (sent h1 \(.blaster.h1.sent), h2 \(.blaster.h2.sent); CPU \(.blaster.h1.cpu_s // 0) s and \(.blaster.h2.cpu_s // 0) s)",
	(.switches | to_entries[] | "  \(.key): RSS first \(.value.rss_mib.first | floor) MiB, last \(.value.rss_mib.last | floor), max \(.value.rss_mib.max | floor); thirds \(.value.rss_mib.first_third_mean | floor) → \(.value.rss_mib.last_third_mean | floor) MiB; anonymous \(.value.anon_mib.first | floor) → \(.value.anon_mib.last | floor) MiB, thirds \(.value.anon_mib.first_third_mean | floor) → \(.value.anon_mib.last_third_mean | floor); Go heap in use \(.value.heap_mib.first | floor) → \(.value.heap_mib.last | floor) MiB (max \(.value.heap_mib.max | floor), thirds \(.value.heap_mib.first_third_mean | floor) → \(.value.heap_mib.last_third_mean | floor)); goroutines \(.value.goroutines.first) → \(.value.goroutines.last); CPU \(.value.cpu_pct | floor) % of a core; died \(.value.died), trend \(.value.trend)"),
	"  RoCE: \(.roce.runs) runs, \(.roce.failed) failed, \(.roce.verified_bytes) of \(.roce.bytes) bytes verified, \(.roce.retx_packets) retransmitted packets, \(.roce.timeouts) timeouts",
	"  TCP: \(.tcp.received_mbps | floor) Mbit/s over \(.tcp.seconds | floor) s, \(.tcp.retransmits) retransmits\(if .tcp.error then ", error: " + .tcp.error else "" end)",
	(.drops | to_entries[] | "  \(.key) drops: \(.value | to_entries | map("\(.key | sub("reason="; ""))=\(.value)") | join(" "))"),
	(.trust_refused | to_entries[] | "  \(.key) trust refused: \(.value | to_entries | map("\(.key)=\(.value)") | join(" "))"),
	(.pfc_refused | to_entries[] | "  \(.key) PFC refused: \(.value | to_entries | map("\(.key)=\(.value)") | join(" "))"),
	"  \(if .pass then "PASS" else "FAIL: " + (.failed | join(", ")) end)"
' "$OUT/summary.json"
jq -e .pass "$OUT/summary.json" >/dev/null
