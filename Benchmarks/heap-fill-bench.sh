#!/usr/bin/env bash
# Benchmarks/heap-fill-bench.sh [ROUNDS]: what the render workers' heap fill costs
# (WorkerLaunch.heapTunables: glibc's malloc perturb, per-thread cache off). The same renders,
# in one process, with and without those tunables, alternating round by round so the machine's
# noise falls on both alike: the 9 large photos of ../shared/corpus, a 256-px fit and a 144-px
# circle each, one job. Counts the render's CPU time (user + system, GNU time), which another
# load on the machine disturbs less than the wall clock. Prints each round and the medians'
# ratio (fill / plain).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
tunables=$(sed -n 's/.*heapTunables = "GLIBC_TUNABLES=\([^"]*\)".*/\1/p' Sources/ThumbWorker/Daemon/WorkerLaunch.swift | sed 's/\\(heapFillByte)/165/')
[[ -n $tunables ]] || { echo "heapTunables not found in WorkerLaunch.swift" >&2; exit 1; }
photos=(../shared/corpus/large-photos/*.jpg)
out=$(mktemp -d "${TMPDIR:-/tmp}/thumbd-heap-fill.XXXXXX")
trap 'rm -rf "$out"' EXIT
declare -a plain fill
for round in $(seq "$rounds"); do
    for mode in plain fill; do
        setting=()
        [[ $mode == fill ]] && setting=("GLIBC_TUNABLES=$tunables")
        cpu=$(env "${setting[@]}" /usr/bin/time -f '%U %S' .build/release/thumbd render "${photos[@]}" \
                  --slot 256x256,fit --slot 48x48@3x,fill,circle --jobs 1 --out-dir "$out" 2>&1 >/dev/null | tail -1)
        ms=$(awk -v cpu="$cpu" 'BEGIN { split(cpu, t, " "); printf "%d", (t[1] + t[2]) * 1000 }')
        echo "round $round $mode ${ms} ms CPU"
        if [[ $mode == fill ]]; then fill+=("$ms"); else plain+=("$ms"); fi
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
p=$(median "${plain[@]}"); f=$(median "${fill[@]}")
echo "tunables: $tunables"
echo "median CPU plain ${p} ms, fill ${f} ms, ratio fill/plain $(awk -v f="$f" -v p="$p" 'BEGIN { printf "%.3f", f / p }')"
