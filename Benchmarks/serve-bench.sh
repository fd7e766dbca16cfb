#!/usr/bin/env bash
# Load benchmark of `thumbd serve` cache hits next to nginx serving the same cache files, in
# the same run, plus hit latency while cold renders keep the render workers busy.
#
#   Benchmarks/serve-bench.sh [--no-build] [--rotate] [--no-sweep] [--duration S] [--rounds N]
#                             [--http-threads N] [--keep] [--no-busy]
#
#   --no-build        skip `swift build -c release`
#   --rotate          wrk rotates over all warmed thumbnails (same order for both servers)
#                     instead of one hot URL
#   --no-sweep        skip the httpThreads 1/2/4 comparison
#   --duration S      seconds per main wrk run (default 10; part 2 and the sweep use less)
#   --rounds N        main runs as N pairs, thumbd then nginx (default 3): the machine's other
#                     load moves both of a pair alike, and the pair of median ratio is reported
#   --http-threads N  thumbd server.httpThreads and nginx worker_processes (default 2)
#   --keep            keep the temp folder (logs, configs, cache) and print its path
#   --no-busy         skip part 2 (hit latency while cold renders run)
#   THUMBD=path       the thumbd binary to measure (default .build/release/thumbd; `swift` from PATH builds it)
#
# Needs root only to install wrk / nginx when they are missing (apt-get). Loopback only.
# Every loop is bounded in count and time; a trap stops every process it started.
set -Eeuo pipefail
trap 'echo "serve-bench: failed (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "$0")/.." && pwd)
build=1 rotate=0 sweep=1 duration=10 rounds=3 http_threads=2 keep=0 busy=1
while (($#)); do
    case "$1" in
        --no-build) build=0 ;;
        --rotate) rotate=1 ;;
        --no-sweep) sweep=0 ;;
        --duration) duration=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --http-threads) http_threads=$2; shift ;;
        --keep) keep=1 ;;
        --no-busy) busy=0 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done
[[ $duration =~ ^[1-9][0-9]{0,3}$ && $rounds =~ ^[1-9]$ ]] || { echo "--duration: 1 to 9999 s; --rounds: 1 to 9" >&2; exit 64; }

started_at=$(date +%s)
say() { printf '%s\n' "$*" >&2; }

# ---------------------------------------------------------------- tools
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v curl >/dev/null || missing+=(curl)
if ((${#missing[@]})); then
    [[ $(id -u) == 0 ]] || { say "need root to install ${missing[*]}"; exit 69; }
    say "installing ${missing[*]}"
    apt-get install -y "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update >/dev/null && apt-get install -y "${missing[@]/nginx-light/nginx}" >/dev/null
    }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ $(id -u) == 0 ]] || { say "nginx is started as root here (user root in its temp config); run as root"; exit 69; }

if ((build)); then
    command -v swift >/dev/null || { say "no swift in PATH (add the toolchain's usr/bin, or --no-build)"; exit 69; }
    say "building (swift build -c release)"
    (cd "$here" && swift build -c release 2>&1 | tail -1) >&2
fi
THUMBD=${THUMBD:-$here/.build/release/thumbd}
# The shared corpus sits beside the package root.
corpus=$(cd "$here/../shared/corpus" && pwd)
[[ -x $THUMBD ]] || { say "no $THUMBD (build first)"; exit 69; }

# ---------------------------------------------------------------- temp area and cleanup
tmp=$(mktemp -d "${TMPDIR:-/tmp}/serve-bench.XXXXXX")
thumbd_pid="" nginx_pid="" loop_pids=()
stop_thumbd() {
    [[ -n $thumbd_pid ]] || return 0
    kill -TERM "$thumbd_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$thumbd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$thumbd_pid" 2>/dev/null || true
    wait "$thumbd_pid" 2>/dev/null || true
    thumbd_pid=""
}
stop_loops() {
    touch "$tmp/stop-loops"
    for pid in "${loop_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${loop_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    loop_pids=()
}
cleanup() {
    set +e
    trap - ERR
    stop_loops
    stop_thumbd
    if [[ -n $nginx_pid ]]; then
        kill -TERM "$nginx_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$nginx_pid" 2>/dev/null
        wait "$nginx_pid" 2>/dev/null
    fi
    if ((keep)); then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
nport=$(free_port)
while [[ $nport == "$port" ]]; do nport=$(free_port); done
sock=$tmp/thumbd.sock
base=http://127.0.0.1:$port
nbase=http://127.0.0.1:$nport

# Assets: copies (symlinks would resolve outside the asset root and be refused; hard links have
# a second name the watcher cannot see, so thumbd never vouches for them and every hit would
# look at its file again, which is not the ordinary case this measures).
mkdir -p "$tmp/assets" "$tmp/cache" "$tmp/logs"
for f in "$corpus"/large-photos/*.jpg "$corpus"/exif-samples/*.jpg; do
    cp "$f" "$tmp/assets/"
done
chmod 755 "$tmp"

# Hits over TCP are signed URLs with the checks on (the issue 23 deployment: public callers,
# signatures required); the socket (root: operator) warms and feeds the cold renders.
signing_secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
write_config() { # httpThreads
    cat >"$tmp/thumbd.json" <<EOF
{"kinds": {"large": {"width": 256, "height": 256, "mode": "fit"}},
 "server": {"httpThreads": $1, "maxConnections": 1024},
 "access": {"signingKeys": [{"id": "bench", "secret": "$signing_secret"}], "signatures": {"tcp": "required", "socket": "off"}}}
EOF
}
start_thumbd() { # workers httpThreads
    write_config "$2"
    local log=$tmp/logs/thumbd-w$1-h$2.log
    "$THUMBD" serve --config "$tmp/thumbd.json" --assets "$tmp/assets" --cache "$tmp/cache" \
        --socket "$sock" --listen "127.0.0.1:$port" --workers "$1" 2>"$log" &
    thumbd_pid=$!
    for _ in $(seq 200); do
        grep -q 'thumbd serving' "$log" 2>/dev/null && return 0
        kill -0 "$thumbd_pid" 2>/dev/null || break
        sleep 0.1
    done
    say "thumbd did not start:"; cat "$log" >&2; exit 70
}
thumbd_errors() { grep -h "^<[0-4]>" "$tmp"/logs/thumbd-*.log 2>/dev/null || true; }
metric() { # name (unlabelled sample) -> value, over the Unix socket
    curl -s --max-time 5 --unix-socket "$sock" http://x/metrics | awk -v n="$1" '$1 == n { print $2 }' || true
}

# wrk output -> "rps p50_ms p90_ms p99_ms requests errors non2xx"
parse_wrk() {
    python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
def ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]
def pct(p):
    m = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s|m)\s*$" % p, text, re.M)
    return ms(*m.groups()) if m else float("nan")
rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
reqs = re.search(r"(\d+) requests in", text)
errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print("%.0f %.3f %.3f %.3f %s %s %s" % (float(rps.group(1)) if rps else 0.0, pct(50), pct(90), pct(99),
      reqs.group(1) if reqs else 0, sum(map(int, errors.groups())) if errors else 0,
      non2xx.group(1) if non2xx else 0))
EOF
}
run_wrk() { # name seconds url [extra wrk args...] -> parsed line; raw output in logs/wrk-NAME.txt
    local name=$1 seconds=$2 url=$3; shift 3
    local script=()
    ((rotate)) && script=(-s "$tmp/rotate-$name.lua")
    timeout $((seconds + 15)) wrk -t2 -c64 -d"${seconds}s" --latency "${script[@]}" "$@" "$url" \
        >"$tmp/logs/wrk-$name.txt" 2>&1 || { say "wrk $name failed:"; cat "$tmp/logs/wrk-$name.txt" >&2; exit 70; }
    parse_wrk "$tmp/logs/wrk-$name.txt"
}
write_rotation() { # name prefix-url paths-file
    python3 - "$2" "$3" >"$tmp/rotate-$1.lua" <<'EOF'
import sys
paths = [line.strip() for line in open(sys.argv[2]) if line.strip()]
print("local paths = {" + ", ".join('"%s"' % p.replace('"', '\\"') for p in paths) + "}")
print("local i = 0")
print("request = function()\n  i = i %% %d + 1\n  return wrk.format(\"GET\", paths[i])\nend" % len(paths))
EOF
}
urlenc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }

# ---------------------------------------------------------------- part 1: hits vs nginx
cores=$(nproc)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
awk '$1 > 0.5 { exit 1 }' /proc/loadavg || say "warning: load average $load_start at start: other work on the machine will add noise (p99 most)"
say "thumbd on 127.0.0.1:$port, nginx on 127.0.0.1:$nport; $cores cores shared by wrk (-t2 -c64) and the server"
start_thumbd 2 "$http_threads"

# Warm: `large` for up to 20 assets (large photos first), keep the 200s and their cache paths.
: >"$tmp/warm.tsv"
warmed=0
while IFS= read -r asset && ((warmed < 20)); do
    enc=$(urlenc "$asset")
    code=$(curl -s --max-time 35 --unix-socket "$sock" -o "$tmp/body" -w '%{http_code}' "http://x/v1/thumbnails/large/$enc?wait=30000")
    [[ $code == 200 ]] || continue
    path=$(curl -s --max-time 5 --unix-socket "$sock" "http://x/v1/thumbnails/large/$enc?as=path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
    signed=$(python3 "$here/docs/signers/sign.py" bench "$signing_secret" large "$asset")
    printf '%s\t%s\t%s\t%s\n' "$enc" "${path#"$tmp/cache/"}" "$(stat -c %s "$tmp/body")" "$signed" >>"$tmp/warm.tsv"
    warmed=$((warmed + 1))
done < <(cd "$tmp/assets" && { ls "$corpus/large-photos" | grep '\.jpg$'; ls | sort; } | awk '!seen[$0]++')
((warmed > 0)) || { say "no thumbnail rendered"; thumbd_errors >&2; exit 70; }
say "warmed $warmed thumbnails"

# The hot URL: the largest thumbnail of 10-20 KB (else the largest one).
read -r hot_asset hot_file hot_bytes hot_url < <(python3 - "$tmp/warm.tsv" <<'EOF'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
mid = [r for r in rows if 10000 <= int(r[2]) <= 20000]
print(*max(mid or rows, key=lambda r: int(r[2])))
EOF
)
cut -f4 "$tmp/warm.tsv" >"$tmp/thumbd-paths.txt"
cut -f2 "$tmp/warm.tsv" | sed 's|^|/|' >"$tmp/nginx-paths.txt"
if ((rotate)); then
    for n in thumbd thumbd-idle thumbd-busy thumbd-h1 thumbd-h2 thumbd-h4; do write_rotation "$n" "$base" "$tmp/thumbd-paths.txt"; done
    for n in nginx nginx-close nginx-idle nginx-busy; do write_rotation "$n" "$nbase" "$tmp/nginx-paths.txt"; done
fi

cat >"$tmp/nginx.conf" <<EOF
user root;
worker_processes $http_threads;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    types { image/jpeg jpg; image/png png; image/webp webp; }
    default_type application/octet-stream;
    client_body_temp_path $tmp/nginx-body;
    proxy_temp_path $tmp/nginx-proxy;
    fastcgi_temp_path $tmp/nginx-fastcgi;
    uwsgi_temp_path $tmp/nginx-uwsgi;
    scgi_temp_path $tmp/nginx-scgi;
    server {
        listen 127.0.0.1:$nport;
        location / { root $tmp/cache; }
    }
}
EOF
"$NGINX" -e "$tmp/logs/nginx-error.log" -p "$tmp" -c "$tmp/nginx.conf" -t >"$tmp/logs/nginx-test.log" 2>&1 \
    || { say "nginx config refused:"; cat "$tmp/logs/nginx-test.log" >&2; exit 70; }
"$NGINX" -e "$tmp/logs/nginx-error.log" -p "$tmp" -c "$tmp/nginx.conf" 2>>"$tmp/logs/nginx-error.log" &
nginx_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null --max-time 1 "$nbase/" && break; sleep 0.1; done

# Same bytes from both?
curl -s --max-time 5 -o "$tmp/body-thumbd" "$base$hot_url"
curl -s --max-time 5 -o "$tmp/body-nginx" "$nbase/$hot_file"
if cmp -s "$tmp/body-thumbd" "$tmp/body-nginx"; then same="identical ($hot_bytes bytes)"; else same="DIFFERENT"; fi
# Does thumbd keep connections alive?
conn_header=$(curl -s --max-time 5 -D - -o /dev/null "$base$hot_url" | tr -d '\r' | awk -F': ' 'tolower($1)=="connection" {print $2}')
reused=$(curl -sv --max-time 5 -o /dev/null -o /dev/null "$base$hot_url" "$base$hot_url" 2>&1 | grep -c 'Re-using existing connection' || true)
nreused=$(curl -sv --max-time 5 -o /dev/null -o /dev/null "$nbase/$hot_file" "$nbase/$hot_file" 2>&1 | grep -c 'Re-using existing connection' || true)

# Pairs of runs, thumbd then nginx: the other load on a shared machine drifts over a minute, and
# moves the two runs of one pair alike more than two runs far apart.
round_rows=()
for ((k = 1; k <= rounds; k++)); do
    if ((rotate)); then
        cp "$tmp/rotate-thumbd.lua" "$tmp/rotate-thumbd-$k.lua"
        cp "$tmp/rotate-nginx.lua" "$tmp/rotate-nginx-$k.lua"
    fi
    say "wrk: round $k of $rounds: thumbd hits, then nginx (${duration}s each)"
    round_rows+=("$(run_wrk "thumbd-$k" "$duration" "$base$hot_url");$(run_wrk "nginx-$k" "$duration" "$nbase/$hot_file")")
done
say "wrk: thumbd /healthz, the HTTP layer alone ($((duration / 2))s)"
rotate_saved=$rotate rotate=0
r_health=$(run_wrk thumbd-healthz $((duration / 2)) "$base/healthz")
rotate=$rotate_saved
say "wrk: nginx with Connection: close ($((duration / 2))s)"
r_nginx_close=$(run_wrk nginx-close $((duration / 2)) "$nbase/$hot_file" -H "Connection: close")
# The pair of median req/s ratio stands for the run (its own p99s with it).
read -r r_thumbd_line r_nginx_line < <(python3 - "${round_rows[@]}" <<'EOF'
import sys
pairs = [row.split(";") for row in sys.argv[1:]]
pairs.sort(key=lambda pair: float(pair[0].split()[0]) / max(float(pair[1].split()[0]), 1.0))
thumbd, nginx = pairs[len(pairs) // 2]
print(thumbd.replace(" ", ","), nginx.replace(" ", ","))
EOF
)
r_thumbd=${r_thumbd_line//,/ } r_nginx=${r_nginx_line//,/ }

# ---------------------------------------------------------------- httpThreads sweep
sweep_rows=()
if ((sweep)); then
    for h in 1 2 4; do
        stop_thumbd
        start_thumbd 2 "$h"
        curl -s --max-time 35 -o /dev/null "$base$hot_url&wait=30000"
        say "wrk: thumbd httpThreads=$h (4s)"
        sweep_rows+=("$h $(run_wrk "thumbd-h$h" 4 "$base$hot_url")")
    done
fi

# ---------------------------------------------------------------- part 2: hits while cold renders run
r_idle="0 nan nan nan 0 0 0" r_nidle="0 nan nan nan 0 0 0" r_busy="0 nan nan nan 0 0 0" r_nbusy="0 nan nan nan 0 0 0"
renders_before=0 renders_after=0 cpu_before=0 cpu_after=0 busy_t0=0 busy_t1=1 render_sum=0 render_count=0
render_p50="?" busy_samples="not run" cold_codes=""
if ((busy)); then
    stop_thumbd
    start_thumbd 1 "$http_threads"
    for p in $(cat "$tmp/thumbd-paths.txt"); do curl -s --max-time 35 -o /dev/null "$base$p&wait=30000"; done # memory cache warm again
    say "wrk: thumbd hits, 1 worker, idle (8s)"
    r_idle=$(run_wrk thumbd-idle 8 "$base$hot_url")
    say "wrk: nginx, control, idle (5s)"
    r_nidle=$(run_wrk nginx-idle 5 "$nbase/$hot_file")

    # 4 loops of cold renders of the large photos (3-12 MP), every request a new size of 800 px
    # and up (so a miss, and heavy enough to keep the single worker busy); at most 400 requests
    # a loop and 45 s. The queue stays at ~3 behind the running render.
    mapfile -t cold_assets < <(ls "$corpus/large-photos" | grep '\.jpg$' | while IFS= read -r a; do urlenc "$a"; done)
    loops=4 per_loop=400
    deadline=$(($(date +%s) + 45))
    rm -f "$tmp/stop-loops"
    for ((l = 0; l < loops; l++)); do
        (
            trap 'exit 0' TERM
            for ((k = 0; k < per_loop; k++)); do
                [[ -e $tmp/stop-loops ]] && break
                (($(date +%s) < deadline)) || break
                w=$((800 + l + loops * k))
                a=${cold_assets[$(((k * loops + l) % ${#cold_assets[@]}))]}
                curl -s --max-time 35 --unix-socket "$sock" -o /dev/null -w '%{http_code}\n' \
                    "http://x/v1/thumbnails/${w}x${w},fit/$a?wait=30000" >>"$tmp/logs/cold-$l.txt" || echo 000 >>"$tmp/logs/cold-$l.txt"
            done
        ) &
        loop_pids+=($!)
    done
    sleep 1.5 # let the queue fill
    # Sampler: running renders and queued jobs every 0.5 s while the busy runs go (bounded).
    (
        for _ in $(seq 40); do
            [[ -e $tmp/stop-loops ]] && break
            curl -s --max-time 2 --unix-socket "$sock" http://x/metrics |
                awk '/^thumbd_running_renders /{r=$2} /^thumbd_queue_depth/{q+=$2} END{print r+0, q+0}' >>"$tmp/logs/busy-samples.txt"
            sleep 0.5
        done
    ) &
    loop_pids+=($!)
    renders_before=$(metric thumbd_render_seconds_count)
    cpu_before=$(metric thumbd_render_cpu_seconds_total)
    busy_t0=$(date +%s.%N)
    say "wrk: thumbd hits, 1 worker, busy with cold renders (8s)"
    r_busy=$(run_wrk thumbd-busy 8 "$base$hot_url")
    busy_t1=$(date +%s.%N)
    renders_after=$(metric thumbd_render_seconds_count)
    cpu_after=$(metric thumbd_render_cpu_seconds_total)
    say "wrk: nginx, control, while the same cold renders run (5s)"
    r_nbusy=$(run_wrk nginx-busy 5 "$nbase/$hot_file")
    stop_loops
    cold_codes=$(cat "$tmp"/logs/cold-*.txt 2>/dev/null | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}' || true)
    busy_samples=$(awk '{n++; if ($1 > 0) r++; q += $2} END{if (n) printf "%d of %d samples with a render running, mean queue %.1f", r, n, q/n; else print "none"}' "$tmp/logs/busy-samples.txt" 2>/dev/null || echo "no samples")
    render_sum=$(metric thumbd_render_seconds_sum)
    render_count=$(metric thumbd_render_seconds_count)
    # At the left margin: python3 -c refuses indented code (the busy phase failed on it).
    render_p50=$(curl -s --max-time 5 --unix-socket "$sock" http://x/metrics | python3 -c '
import re, sys
b = [(float("inf") if m.group(1) == "+Inf" else float(m.group(1)), int(m.group(2))) for m in re.finditer(r"thumbd_render_seconds_bucket\{le=\"([^\"]+)\"\} (\d+)", sys.stdin.read())]
n = b[-1][1] if b else 0
print(next(("<= %g s" % le for le, c in b if c >= n / 2), "?") if n else "?")')
fi

# ---------------------------------------------------------------- report
ROUNDS="$(printf '%s|' "${round_rows[@]}")" python3 - "$r_thumbd" "$r_health" "$r_nginx" "$r_nginx_close" "$r_idle" "$r_busy" "$r_nidle" "$r_nbusy" "$renders_before" "$renders_after" \
    "$cpu_before" "$cpu_after" "$busy_t0" "$busy_t1" "$render_sum" "$render_count" "${sweep_rows[@]}" <<EOF
import math, os, sys
a = sys.argv[1:]
row = lambda s: dict(zip("rps p50 p90 p99 n err non2xx".split(), map(float, s.split())))
t, health, n, nc, idle, busy, nidle, nbusy = map(row, a[:8])
rb, ra, cb, ca, t0, t1, rsum, rcount = a[8:16]
sweep = [s.split() for s in a[16:]]
print()
print("thumbd serve vs nginx: cache hits of the same 256 px thumbnail files")
print("  machine: $cores cores, shared by wrk (-t2 -c64), the server under test and anything else running")
print("  load average at start: $load_start; at end: $(cut -d' ' -f1-3 /proc/loadavg)")
print("  thumbd: server.httpThreads=$http_threads, 2 render workers (idle); nginx: worker_processes $http_threads, sendfile on, access_log off")
print("  URL: %s" % ("rotating over $warmed warmed thumbnails (same order for both)" if $rotate else "one hot thumbnail ($hot_bytes bytes)"))
print("  body thumbd vs nginx (hot URL): $same; thumbd Connection header: ${conn_header:-none} "
      "(curl reused connection: thumbd ${reused}/1, nginx ${nreused}/1)")
print()
fmt = "  %-34s %10s %8s %8s %8s %8s"
line = lambda name, r: print(fmt % (name, "%.0f" % r["rps"], "%.2f" % r["p50"], "%.2f" % r["p90"], "%.2f" % r["p99"], "%d/%d" % (r["err"], r["non2xx"])))
print(fmt % ("server", "req/s", "p50 ms", "p90 ms", "p99 ms", "errors"))
pairs = [[row(half) for half in pair.split(";")] for pair in os.environ["ROUNDS"].split("|") if pair]
for k, (pt, pn) in enumerate(pairs, 1):
    line("round %d: thumbd (${duration}s)" % k, pt)
    line("round %d: nginx (${duration}s)" % k, pn)
print("  round ratios thumbd/nginx req/s: " + " ".join("%.2fx" % (pt["rps"] / pn["rps"]) for pt, pn in pairs))
print()
for name, r in (("thumbd, median pair", t), ("nginx, median pair", n), ("thumbd /healthz, no pipeline ($((duration / 2))s)", health),
                ("nginx, Connection: close ($((duration / 2))s)", nc)):
    line(name, r)
rr, pr = t["rps"] / n["rps"], t["p99"] / n["p99"]
print(fmt % ("ratio thumbd/nginx, median pair", "%.2fx" % rr, "%.2fx" % (t["p50"] / n["p50"]), "%.2fx" % (t["p90"] / n["p90"]), "%.2fx" % pr, ""))
print("  targets (issue 23): req/s >= 1.0x nginx: %s; p99 <= 1.1x nginx: %s"
      % ("PASS" if rr >= 1.0 else "FAIL", "PASS" if pr <= 1.1 else "FAIL"))
print("  (errors column: wrk socket errors / non-2xx responses; ratios compare the median pair's rows)")
if "${conn_header,,}" == "close":
    print("  note: thumbd answers every hit with 'Connection: close', so wrk opens a new TCP connection per request;")
    print("        the 'nginx, Connection: close' row is nginx paying that same per-request cost.")
if sweep:
    print()
    print("thumbd server.httpThreads sweep (2 workers, 4 s each, same URL(s) as above)")
    print(fmt % ("httpThreads", "req/s", "p50 ms", "p90 ms", "p99 ms", "errors"))
    best = max(sweep, key=lambda s: float(s[1]))
    for s in sweep:
        line(s[0] + (" (best req/s)" if s is best else ""), row(" ".join(s[1:])))
if not $busy:
    sys.exit(0)
print()
print("hit latency while cold renders keep the worker busy (thumbd --workers 1; thumbd 8 s, nginx control 5 s)")
print(fmt % ("", "req/s", "p50 ms", "p90 ms", "p99 ms", "errors"))
for name, r in (("thumbd idle", idle), ("thumbd + 4 loops of cold renders", busy),
                ("nginx idle (control)", nidle), ("nginx + the same cold renders", nbusy)):
    line(name, r)
ratio = busy["p99"] / idle["p99"]
ratios = lambda name, b, i: print(fmt % (name, *("%.2fx" % (b[k] / i[k]) for k in ("rps", "p50", "p90", "p99")), ""))
ratios("ratio thumbd busy/idle", busy, idle)
ratios("ratio nginx busy/idle (control)", nbusy, nidle)
print("  target: thumbd busy p99 < 3x idle: %s" % ("PASS" if ratio < 3 else "FAIL"))
done_ = int(float(ra or 0) - float(rb or 0))
cpu = float(ca or 0) - float(cb or 0)
wall = float(t1) - float(t0)
print("  cold renders completed during the thumbd busy run: %d in %.1f s (render thread CPU %.1f s = %.0f%% of one core)"
      % (done_, wall, cpu, 100 * cpu / wall))
print("  worker state during the busy runs: $busy_samples")
if float(rcount or 0):
    print("  render wall time over the whole run: mean %.0f ms, median $render_p50 (%s renders)" % (1000 * float(rsum) / float(rcount), rcount))
print("  cold loop responses: ${cold_codes:-none}")
EOF
errors=$(thumbd_errors)
if [[ -n $errors ]]; then
    echo
    echo "thumbd logged errors/warnings:"
    printf '%s\n' "$errors" | sort | uniq -c | sort -rn | head -10
fi
echo
echo "elapsed: $(($(date +%s) - started_at)) s"
