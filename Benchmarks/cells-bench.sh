#!/usr/bin/env bash
# thumbd-cells.js beside a naive page (plain <img> per cell) and beside itself with cancellation off,
# in Debian's headless Chromium behind nginx with the shipped config: 10,000 assets flung through a
# 4-column grid (600 px every 16 ms for 20 s), then stopped. Prints the table of Benchmarks/README.md
# (medians of REPEATS runs of the library and of the naive page, alternating; one run without
# cancellation) after the browser test's own checks. Usage: Benchmarks/cells-bench.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release -Xswiftc -enable-testing --product thumbd >/dev/null   # the test build's flags: no rebuild
python3 Tests/browser/cells_browser.py --thumbd .build/release/thumbd --bench --repeats "${1:-5}" \
    --json "${TMPDIR:-/tmp}/cells-bench.json"
