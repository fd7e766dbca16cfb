#!/usr/bin/env bash
# Batch throughput: `thumbd batch` (one process, its workers on all cores) against
# `vipsthumbnail` run as `xargs -P2` over the same 200 files, into `large` (256 px fit) and
# `contact-avatar@3x` (144 px centre crop), in the same run. Prints seconds, images/s, ratio.
#   Benchmarks/batch-bench.sh [--no-build] [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
build=1
if [[ "${1:-}" == "--no-build" ]]; then build=0; shift; fi
count=${1:-200}
((build)) && swift build -c release >/dev/null
command -v vipsthumbnail >/dev/null || { echo "vipsthumbnail missing: apt-get install libvips-tools" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/thumbd-batch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/assets" "$work/vips-large" "$work/vips-avatar"
sources=(../shared/corpus/large-photos/*.jpg)
for ((i = 0; i < count; i++)); do
  src=${sources[i % ${#sources[@]}]}
  ln "$src" "$work/assets/$(printf 'photo-%04d.jpg' "$i")" 2>/dev/null || cp "$src" "$work/assets/$(printf 'photo-%04d.jpg' "$i")"
done
now() { date +%s.%N; }

start=$(now)
.build/release/thumbd batch "$work/assets" --kinds 'large,48x48@3x,fill,circle' --cache "$work/cache" --json > "$work/thumbd.json"
thumbd_seconds=$(echo "$(now) - $start" | bc)

start=$(now)
ls "$work"/assets/*.jpg | xargs -P2 -n 20 vipsthumbnail --size 256x256 -o "$work/vips-large/%s.jpg"
ls "$work"/assets/*.jpg | xargs -P2 -n 20 vipsthumbnail --size 144x144 --smartcrop centre -o "$work/vips-avatar/%s.jpg"
vips_seconds=$(echo "$(now) - $start" | bc)

python3 - "$work/thumbd.json" "$thumbd_seconds" "$vips_seconds" "$count" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
t, v, n = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]) * 2
print(f"{n} thumbnails ({n // 2} photos x large + contact-avatar@3x), 2 cores")
print(f"thumbd batch      {t:7.2f} s  {n / t:6.1f} img/s  (rendered {summary['rendered']}, failed {summary['failed']})")
print(f"vipsthumbnail -P2 {v:7.2f} s  {n / v:6.1f} img/s")
print(f"ratio thumbd/vips {v / t:5.2f}  (target >= 1.2)")
PY
