#!/usr/bin/env python3
"""What the render sandbox costs: the same work with `"sandbox": true` (decodes in worker
processes) and `"sandbox": false` (decodes in the daemon's threads), alternating in one run so
that the machine's noise falls on both alike.

  1. `thumbd batch` throughput over COUNT real photos, two kinds each (one decode per photo).
  2. Cold-render latency: a `thumbd serve` with an empty cache asked for distinct photos one
     at a time (each request is a render), median and p90.
  3. Cache-hit throughput: wrk against one warm URL of that daemon.

  python3 Benchmarks/sandbox-bench.py [--no-build] [--count N] [--rounds R] [--wrk-seconds S]

Prints each mode's numbers and sandboxed/in-process ratios. Scratch files under $TMPDIR.
"""
import argparse, json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(HERE, "..", "shared", "corpus")
THUMBD = os.path.join(HERE, ".build", "release", "thumbd")

parser = argparse.ArgumentParser()
parser.add_argument("--no-build", action="store_true")
parser.add_argument("--count", type=int, default=120)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--cold", type=int, default=40, help="distinct photos per cold-latency round")
parser.add_argument("--wrk-seconds", type=int, default=5)
options = parser.parse_args()

if not options.no_build:
    subprocess.run(["swift", "build", "-c", "release"], cwd=HERE, check=True)
if not os.access(THUMBD, os.X_OK):
    sys.exit(f"no {THUMBD}: build first")

work = tempfile.mkdtemp(prefix="thumbd-sandbox-bench.", dir=os.environ.get("TMPDIR"))
assets = os.path.join(work, "assets")
os.makedirs(assets)
photos = sorted(os.path.join(CORPUS, "large-photos", name) for name in os.listdir(os.path.join(CORPUS, "large-photos"))
                if name.lower().endswith(".jpg"))
# Distinct names so that each is its own cache key; hard links cost no disk.
stride_total = -(-options.cold // len(photos)) * len(photos) * 2 * options.rounds
for index in range(max(options.count, stride_total)):
    target = os.path.join(assets, f"photo-{index:04d}.jpg")
    source = photos[index % len(photos)]
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
names = sorted(os.listdir(assets))

def config(sandbox, path, port=None):
    body = {"sandbox": sandbox, "workers": 2,
            "kinds": {"large": {"width": 256, "height": 256}, "avatar": {"width": 48, "height": 48, "scales": [3],
                                                                        "mode": "fill", "mask": "circle"}}}
    if port:
        body["server"] = {"listen": f"127.0.0.1:{port}"}
    with open(path, "w") as file:
        json.dump(body, file)
    return path

def batch_seconds(sandbox, round_index):
    cache = os.path.join(work, f"batch-cache-{sandbox}-{round_index}")
    listing = os.path.join(work, "batch-assets")
    if not os.path.isdir(listing):
        os.makedirs(listing)
        for name in names[:options.count]:
            os.link(os.path.join(assets, name), os.path.join(listing, name))
    cfg = config(sandbox, os.path.join(work, f"batch-{sandbox}.json"))
    start = time.monotonic()
    result = subprocess.run([THUMBD, "batch", listing, "--config", cfg, "--kinds", "large,avatar", "--cache", cache, "--json"],
                            capture_output=True, text=True)
    seconds = time.monotonic() - start
    summary = json.loads(result.stdout or "{}")
    if result.returncode != 0 or summary.get("failed", 1) != 0:
        sys.exit(f"batch failed ({result.returncode}): {result.stderr[-2000:]}")
    shutil.rmtree(cache, ignore_errors=True)
    return seconds

def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

def serve(sandbox, round_index):
    port = free_port()
    cfg = config(sandbox, os.path.join(work, f"serve-{sandbox}.json"), port)
    cache = os.path.join(work, f"serve-cache-{sandbox}-{round_index}")
    log = open(os.path.join(work, f"serve-{sandbox}-{round_index}.log"), "w")
    process = subprocess.Popen([THUMBD, "serve", "--config", cfg, "--assets", assets, "--cache", cache,
                                "--socket", os.path.join(work, f"s-{sandbox}-{round_index}.sock")], stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            return process, port, cache
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit(f"thumbd serve did not come up: see {log.name}")

def stop(process, cache):
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    shutil.rmtree(cache, ignore_errors=True)

def cold_and_hits(sandbox, round_index):
    process, port, cache = serve(sandbox, round_index)
    try:
        # Each round asks for names no earlier round asked for, starting at a multiple of the
        # number of photos: both modes render the same photos in the same order.
        stride = -(-options.cold // len(photos)) * len(photos)
        offset = (round_index * 2 + (0 if sandbox else 1)) * stride
        latencies = []
        for name in names[offset:offset + options.cold]:
            start = time.monotonic()
            reply = urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/thumbnails/large/{name}", timeout=60)
            reply.read()
            latencies.append((time.monotonic() - start) * 1000)
        # The same photo's thumbnail for both modes (sizes differ from photo to photo).
        hot = f"http://127.0.0.1:{port}/v1/thumbnails/large/{names[offset]}"
        rps = None
        if shutil.which("wrk"):
            output = subprocess.run(["wrk", "-t2", "-c32", f"-d{options.wrk_seconds}s", hot],
                                    capture_output=True, text=True).stdout
            for line in output.splitlines():
                if line.startswith("Requests/sec:"):
                    rps = float(line.split()[1])
        return latencies, rps
    finally:
        stop(process, cache)

results = {True: {"batch": [], "cold": [], "rps": []}, False: {"batch": [], "cold": [], "rps": []}}
for round_index in range(options.rounds):
    # Alternate which mode goes first, so that neither always meets a warmer page cache.
    for sandbox in ([True, False] if round_index % 2 == 0 else [False, True]):
        results[sandbox]["batch"].append(batch_seconds(sandbox, round_index))
        latencies, rps = cold_and_hits(sandbox, round_index)
        results[sandbox]["cold"].extend(latencies)
        if rps is not None:
            results[sandbox]["rps"].append(rps)

def p90(values):
    return sorted(values)[int(len(values) * 0.9) - 1] if values else float("nan")

print(f"{options.count} photos x 2 kinds per batch run, {options.rounds} rounds per mode, {options.cold} cold renders per round, "
      f"{os.cpu_count()} cores")
summary = {}
for sandbox in (True, False):
    r = results[sandbox]
    batch = statistics.median(r["batch"])
    summary[sandbox] = (options.count * 2 / batch, statistics.median(r["cold"]), p90(r["cold"]),
                        statistics.median(r["rps"]) if r["rps"] else float("nan"))
    name = "sandboxed " if sandbox else "in-process"
    print(f"{name}  batch {summary[sandbox][0]:6.1f} img/s   cold median {summary[sandbox][1]:6.1f} ms  p90 {summary[sandbox][2]:6.1f} ms"
          f"   hits {summary[sandbox][3]:8.0f} req/s")
on, off = summary[True], summary[False]
print(f"sandboxed/in-process: batch throughput {on[0] / off[0]:.3f}, cold median {on[1] / off[1]:.3f}, "
      f"cold p90 {on[2] / off[2]:.3f}, hits {on[3] / off[3]:.3f}")
shutil.rmtree(work, ignore_errors=True)
