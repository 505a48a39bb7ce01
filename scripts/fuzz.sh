#!/usr/bin/env bash
# Runs every Go fuzz target in the repository, one after another, for
# FUZZTIME each (argument 1, default 1m; any -fuzztime value, e.g. 30s or
# 5000x), with -parallel 1 so that it leaves the second core alone. Then
# copies the corpus entries fuzzing found from $(go env GOCACHE)/fuzz into
# the package's testdata/fuzz/<Target>/, where go test replays them as
# regression tests: at most FUZZ_CORPUS_MAX (default 50) files per target,
# picked across the range of sizes. Prints the run time and exec count of
# every target and exits non-zero if any target failed (go test has then
# written the failing input to testdata/fuzz/<Target>/ already).
#
#   scripts/fuzz.sh                      # make fuzz
#   scripts/fuzz.sh 10m                  # make fuzz FUZZTIME=10m
#   scripts/fuzz.sh 2m ./rocev2/psn      # only these package directories
#   FUZZ_RUN='Classify|Trim' scripts/fuzz.sh 5m ./rocev2   # only these targets
set -euo pipefail
cd "$(dirname "$0")/.."

# All in one function: bash then reads the whole script before running
# it, so editing the file during a long run cannot break the run.
main() {

	fuzztime=${1:-1m}
	shift || true
	max=${FUZZ_CORPUS_MAX:-50}
	cache="$(go env GOCACHE)/fuzz"
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT

	summary=()
	failed=0
	# Packages with fuzz targets, found by their test files, or those named.
	dirs=("$@")
	if [ "${#dirs[@]}" -eq 0 ]; then
		mapfile -t dirs < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u)
	fi
	for dir in "${dirs[@]}"; do
		pkg=$(go list "$dir")
		for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u | grep -E "${FUZZ_RUN:-.}"); do
			echo "== $pkg $target for $fuzztime"
			src="$cache/$pkg/$target"
			dst="$dir/testdata/fuzz/$target"
			before=$(ls "$dst" 2>/dev/null | sort || true)
			status=ok
			if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel 1 "$dir" 2>&1 | tee "$log"; then
				status=FAILED
				# Go 1.26's fuzz coordinator can fail a run with a bare "context
				# deadline exceeded" as -fuzztime ends (go.dev/issue/75804, fixed
				# in 1.27): no input failed, none was written. A real failure
				# writes its input to testdata/fuzz/<Target>/.
				after=$(ls "$dst" 2>/dev/null | sort || true)
				if [ "$before" = "$after" ] && grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
					status=ok-race
				else
					failed=1
				fi
			fi
			# The last progress line: "fuzz: elapsed: 1m0s, execs: 123 (2/sec), ..."
			last=$(grep -o 'elapsed: [^,]*, execs: [0-9]*' "$log" | tail -n1 || true)

			# Copy new entries, spread over the sizes, up to $max in total.
			added=0
			if [ -d "$src" ]; then
				mkdir -p "$dst"
				have=$(find "$dst" -maxdepth 1 -type f | wc -l)
				room=$((max - have))
				new=()
				while IFS= read -r f; do
					[ -e "$dst/$(basename "$f")" ] || new+=("$f")
				done < <(ls -Sr "$src" | sed "s|^|$src/|")
				if [ "$room" -gt 0 ] && [ "${#new[@]}" -gt 0 ]; then
					take=$((room < ${#new[@]} ? room : ${#new[@]}))
					for ((i = 0; i < take; i++)); do
						# Evenly spaced indexes over the new files, smallest to largest.
						j=$((i * ${#new[@]} / take))
						cp "${new[$j]}" "$dst/"
						added=$((added + 1))
					done
				fi
			fi
			summary+=("$(printf '%-8s %-28s %-40s %s' "$status" "$target" "${last:-no progress line}" "+$added corpus files")")
		done
	done

	echo
	echo "== fuzz summary ($fuzztime per target, -parallel 1; ok-race: go.dev/issue/75804, no failing input)"
	printf '%s\n' "${summary[@]}"
	exit "$failed"
}

main "$@"
