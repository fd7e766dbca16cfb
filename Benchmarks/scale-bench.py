#!/usr/bin/env python3
"""Costs of `thumbd serve` from a thousand assets to a million (issue 11).

    Benchmarks/scale-bench.py [--sizes 1000,10000,100000] [--cold-max 100000] [--thumbd PATH]
                              [--work DIR] [--json FILE] [--no-slots]

For each size N it builds (once, kept under $TMPDIR/thumbd-scale unless --work) a tree of N small
real images from ../shared/corpus (100 per folder) and a cache holding one thumbnail of each
(`thumbd batch`), then measures with a warm cache:

  first_hit_s     start → the first cached thumbnail answered 200
  ready_s         start → GET /readyz 200 (n/a on a daemon without /readyz)
  sigterm_s       SIGTERM 0.3 s after start → the process gone
  idle_rss_mb     the daemon's RSS once ready and idle (its workers apart)
  burst_s         2,000 new files in a new folder (with the memory cache full) → 2,000 watcher
                  events handled (thumbd_watcher_events_total)
  rm_s            rm -rf of 100 folders (10k files, or half the tree when smaller) → their
                  thumbnails gone from the index (thumbd_cache_entries{level="disk"}); restore_done:
                  how many of them were pre-rendered again once the folders were moved back
  cold_s / cold_done   (N ≤ --cold-max) an empty cache: start → every pre-render done, and how
                  many were done when it stopped (30 s without progress ends the wait)

and once, independent of N, slot churn: 150,000 requests with new slots (past maxSlots) on one
hot thumbnail, the worst and p99.9 latency, next to 150,000 requests on one slot (the control,
same run): a stall from trimming the slot table shows as a worst case beyond the control's.

Each cost is also printed per asset, so that growth faster than linear stands out. Results go
to --json (default Benchmarks/results/scale-last.json). Needs nothing beyond Python and a built
thumbd (`swift build -c release`).
"""
import argparse, json, os, random, shutil, signal, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
CORPUS = os.path.join(os.path.dirname(PACKAGE), "shared", "corpus")
PER_FOLDER = 100
KIND = "tile"
CONFIG = {"kinds": {KIND: {"width": 64, "height": 64, "mode": "fill", "scales": [1], "pregenerate": True}},
          "cache": {"memoryBytes": 512 << 20, "diskBytes": 64 << 30},
          "server": {"maxQueuedJobs": 4096}}


def small_images():
    """OK rows of the manifest under 12 KB: real images written by others."""
    names = []
    with open(os.path.join(CORPUS, "manifest.tsv")) as manifest:
        next(manifest)
        for line in manifest:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > 6 and cols[6] == "OK" and int(cols[2]) < 12_000 and cols[4] in ("JPEG", "PNG"):
                names.append(os.path.join(CORPUS, cols[0], cols[1]))
    return sorted(names)


def relative(index, sources):
    source = sources[index % len(sources)]
    return f"d{index // PER_FOLDER:05d}/f{index % PER_FOLDER:02d}{os.path.splitext(source)[1].lower()}"


def build_tree(root, count, sources):
    marker = root + ".complete"
    if os.path.exists(marker):
        return
    shutil.rmtree(root, ignore_errors=True)
    started = time.time()
    for index in range(count):
        path = os.path.join(root, relative(index, sources))
        if index % PER_FOLDER == 0:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(sources[index % len(sources)], path)
    open(marker, "w").close()
    print(f"  tree of {count} files built in {time.time() - started:.1f} s", file=sys.stderr)


class Client:
    """HTTP/1.1 keep-alive over the Unix socket: little enough per request to time the server."""

    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buffer = b""

    def get(self, target):
        self.sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next((int(l.split(":", 1)[1]) for l in lines[1:] if l.lower().startswith("content-length:")), 0)
        while len(self.buffer) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, body

    def close(self):
        self.sock.close()


def once(sock, target, timeout=5):
    try:
        client = Client(sock, timeout)
        try:
            return client.get(target)
        finally:
            client.close()
    except OSError:
        return None, b""


def metric(sock, name, label=""):
    status, body = once(sock, "/metrics")
    if status != 200:
        return None
    for line in body.decode().splitlines():
        if line.startswith(name + (("{" + label + "}") if label else " ")):
            return float(line.rsplit(" ", 1)[1])
    return None


def wait_until(condition, limit_s, step_s=0.01):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step_s)
    return None


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


class Daemon:
    def __init__(self, thumbd, config, tree, cache, sock, log):
        self.sock = sock
        if os.path.exists(sock):
            os.unlink(sock)
        self.log = open(log, "w")
        self.started = time.time()
        self.process = subprocess.Popen([thumbd, "serve", "--config", config, "--assets", tree, "--cache", cache,
                                         "--socket", sock, "--workers", "2"], stderr=self.log)

    def stop(self, timeout=120):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return time.time()


def hit_target(path):
    return f"/v1/thumbnails/{KIND}/{path}?scale=1"


def measure_size(args, count, sources, slots_done):
    work = args.work
    tree, cache = os.path.join(work, f"tree-{count}"), os.path.join(work, f"cache-{count}")
    config = os.path.join(work, "config.json")
    sock = os.path.join(work, "thumbd.sock")
    log = os.path.join(work, f"thumbd-{count}.log")
    build_tree(tree, count, sources)
    row = {"files": count}

    # The warm cache: a batch over the tree (it skips what is cached already).
    started = time.time()
    subprocess.run([args.thumbd, "batch", "--config", config, tree, "--kinds", KIND, "--cache", cache,
                    "--workers", "2", "--json"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    row["batch_fill_s"] = round(time.time() - started, 2)
    probe = hit_target(relative(count - 1, sources))

    # SIGTERM while starting.
    daemon = Daemon(args.thumbd, config, tree, cache, sock, log)
    time.sleep(0.3)
    daemon.process.send_signal(signal.SIGTERM)
    sent = time.time()
    try:
        daemon.process.wait(120)
        row["sigterm_s"] = round(time.time() - sent, 2)
    except subprocess.TimeoutExpired:
        row["sigterm_s"] = None
    daemon.stop()

    daemon = Daemon(args.thumbd, config, tree, cache, sock, log)
    try:
        first = wait_until(lambda: once(sock, probe)[0] == 200 and time.time(), 300)
        row["first_hit_s"] = round(first - daemon.started, 2) if first else None
        def ready():
            status, _ = once(sock, "/readyz")
            return status if status in (200, 404) else None
        readiness = wait_until(ready, 600, 0.05)
        row["ready_s"] = round(time.time() - daemon.started, 2) if readiness == 200 else None
        # Settled: the watcher's start-up reconcile queues nothing when the cache is whole.
        wait_until(lambda: metric(sock, "thumbd_queue_depth", 'priority="batch"') == 0, 600, 0.2)
        time.sleep(2)
        rss = rss_kb(daemon.process.pid)
        row["idle_rss_mb"] = round(rss / 1024, 1) if rss else None

        def settled():
            wait_until(lambda: idle(sock), 600, 0.2)

        # Fill the memory cache (up to 200k entries), then a burst of 2,000 new files.
        client = Client(sock)
        for index in range(min(count, 200_000)):
            client.get(hit_target(relative(index, sources)))
        client.close()
        row["memory_entries"] = metric(sock, "thumbd_cache_entries", 'level="memory"')
        events_before = metric(sock, "thumbd_watcher_events_total") or 0
        burst = os.path.join(tree, "burst")
        shutil.rmtree(burst, ignore_errors=True)
        started = time.time()
        os.makedirs(burst)
        for index in range(2000):
            shutil.copyfile(sources[index % len(sources)], os.path.join(burst, f"b{index:04d}" + os.path.splitext(sources[index % len(sources)])[1].lower()))
        handled = wait_until(lambda: (metric(sock, "thumbd_watcher_events_total") or 0) - events_before >= 2000 and time.time(), 300, 0.02)
        row["burst_s"] = round(handled - started, 2) if handled else None
        shutil.rmtree(burst)
        # The burst's pre-renders (queued in the backlog since issue 11; dropped before) must be
        # over before rm -rf is timed: otherwise the renders share the two cores with its events,
        # and what they store after their file's removal moves the entry counts below.
        settled()

        # rm -rf of 100 folders (or half the tree), back afterwards.
        folders = min(100, max(1, count // PER_FOLDER // 2))
        removed = folders * PER_FOLDER
        wait_until(lambda: (metric(sock, "thumbd_cache_entries", 'level="disk"') or 0) >= count, 120, 0.2)
        settled()
        disk_before = metric(sock, "thumbd_cache_entries", 'level="disk"') or 0
        aside = os.path.join(work, "removed")
        shutil.rmtree(aside, ignore_errors=True)
        os.makedirs(aside)
        started = time.time()
        for folder in range(folders):
            shutil.rmtree(os.path.join(tree, f"d{folder:05d}"))
        gone = wait_until(lambda: (metric(sock, "thumbd_cache_entries", 'level="disk"') or 0) <= disk_before - removed and time.time(), 600, 0.05)
        row["rm_files"] = removed
        row["rm_s"] = round(gone - started, 2) if gone else None
        for index in range(removed):
            path = os.path.join(tree, relative(index, sources))
            if index % PER_FOLDER == 0:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(sources[index % len(sources)], path)
        # Moving the folders back in: every pre-render must be done eventually.
        row["restore_done"] = wait_for_entries(sock, disk_before) - (disk_before - removed)

        if not slots_done and not args.no_slots:
            row.update(slot_churn(sock, probe))
    finally:
        daemon.stop()

    if count <= args.cold_max:
        cold = cache + "-cold"
        shutil.rmtree(cold, ignore_errors=True)
        daemon = Daemon(args.thumbd, config, tree, cold, sock, log)
        try:
            done = wait_for_entries(sock, count)
            row["cold_done"] = done
            row["cold_s"] = round(time.time() - daemon.started, 1) if done >= count else None
        finally:
            daemon.stop()
            shutil.rmtree(cold, ignore_errors=True)
    return row


def idle(sock):
    """No batch job queued and no backlog asset waiting or in flight (a build without the
    backlog's metrics has none: None counts as 0)."""
    return all((metric(sock, name, label) or 0) == 0 for name, label in [
        ("thumbd_queue_depth", 'priority="batch"'), ("thumbd_backlog_assets", ""), ("thumbd_backlog_in_flight_assets", ""),
        ("thumbd_running_renders", "")])


def wait_for_entries(sock, target, stall_s=30):
    """Waits until the disk cache holds `target` entries, or nothing happened for `stall_s`
    (work dropped, not queued): returns the entries held then."""
    done, last, last_progress = 0, -1, time.time()
    while time.time() - last_progress < stall_s:
        done = int(metric(sock, "thumbd_cache_entries", 'level="disk"') or 0)
        if done >= target:
            break
        if done != last:
            last, last_progress = done, time.time()
        time.sleep(0.5)
    return done


def slot_churn(sock, probe, requests=150_000):
    """New slots past maxSlots against the same requests on one slot (the control, same run):
    a stall from trimming shows as a worst case far beyond the control's."""
    result = {"slot_churn_requests": requests}
    for name, suffix in (("control", lambda index: "&client=churn&slot=same"), ("churn", lambda index: f"&client=churn&slot=s{index}")):
        client = Client(sock)
        latencies = []
        for index in range(requests):
            started = time.perf_counter()
            status, _ = client.get(probe + suffix(index))
            latencies.append(time.perf_counter() - started)
            if status != 200:
                client.close()
                return {"slot_churn_error": f"{name}: status {status} at request {index}"}
        client.close()
        latencies.sort()
        result[f"slot_{name}_max_ms"] = round(latencies[-1] * 1000, 2)
        result[f"slot_{name}_p999_ms"] = round(latencies[int(len(latencies) * 0.999)] * 1000, 2)
        result[f"slot_{name}_p50_ms"] = round(latencies[len(latencies) // 2] * 1000, 3)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--cold-max", type=int, default=100_000)
    parser.add_argument("--thumbd", default=os.path.join(PACKAGE, ".build", "release", "thumbd"))
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", tempfile.gettempdir()), "thumbd-scale"))
    parser.add_argument("--json", default=os.path.join(HERE, "results", "scale-last.json"))
    parser.add_argument("--no-slots", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    with open(os.path.join(args.work, "config.json"), "w") as config:
        json.dump(CONFIG, config)
    sources = small_images()
    rows = []
    for count in (int(size) for size in args.sizes.split(",")):
        print(f"size {count}", file=sys.stderr)
        rows.append(measure_size(args, count, sources, slots_done=bool(rows)))
        print("  " + json.dumps(rows[-1]), file=sys.stderr)
    keys = ["files", "first_hit_s", "ready_s", "sigterm_s", "idle_rss_mb", "memory_entries", "burst_s", "rm_files", "rm_s", "restore_done",
            "cold_s", "cold_done", "batch_fill_s"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join("n/a" if row.get(key) is None else str(row.get(key)) for key in keys) + " |")
    churn = next((row for row in rows if "slot_churn_requests" in row), None)
    if churn:
        print(f"slot churn: {json.dumps({k: v for k, v in churn.items() if k.startswith('slot_')})}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
