#!/usr/bin/env python3
"""Redis Streams consumer against the spool folder, same jobs, same run (issue 27).

1. Throughput: N jobs (each asset once, `large`) drained by `thumbd batch --spool DIR` and by
   `thumbd batch --queue redis://…` (one pass each, fresh caches), jobs per second of each.
2. Latency: a `thumbd batch --queue … --follow` consumer; jobs are XADDed one at a time and the
   time from the XADD's reply to the job's result in STREAM:results is taken (a blocking XREAD on
   the results, over a raw RESP socket: no redis-cli process in the measurement). Twice: jobs that
   render, then the same jobs again, which are up to date: that second latency is what the queue
   adds (read, cache check, the finish script), with no render in it.

    python3 Benchmarks/queue-bench.py [--no-build] [--jobs N] [--samples K]

Needs redis-server (apt-get install redis-server). Assets: the corpus's pngsuite files the
manifest says decode (small: the queue's share of the time shows), or --photos for the large
photos. Scratch files go under $TMPDIR.
"""
import argparse
import csv
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
THUMBD = PACKAGE / ".build/release/thumbd"
CORPUS = PACKAGE.parent / "shared/corpus"


class Redis:
    """A minimal RESP client: enough for XADD, XREAD and XLEN without a library."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buffer = b""

    def command(self, *args):
        out = b"*%d\r\n" % len(args)
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b"$%d\r\n%s\r\n" % (len(data), data)
        self.sock.sendall(out)
        return self.reply()

    def line(self):
        while b"\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def exactly(self, count):
        while len(self.buffer) < count + 2:
            self.buffer += self.sock.recv(65536)
        data, self.buffer = self.buffer[:count], self.buffer[count + 2:]
        return data

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if int(rest) < 0 else self.exactly(int(rest)).decode()
        if kind == b"*":
            return None if int(rest) < 0 else [self.reply() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")


def assets(photos):
    if photos:
        return sorted((CORPUS / "large-photos").glob("*.jpg"))
    with open(CORPUS / "manifest.tsv") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return sorted(CORPUS / r["set"] / r["file"] for r in rows if r.get("set") == "pngsuite" and r.get("status") == "OK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 65):
        sys.exit(f"{cmd[:3]}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return seconds, json.loads(done.stdout or b"{}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--jobs", type=int, default=400, help="jobs for the throughput runs (default 400)")
    parser.add_argument("--samples", type=int, default=60, help="jobs timed one at a time (default 60)")
    parser.add_argument("--photos", action="store_true", help="the large photos instead of pngsuite")
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "thumbd"], cwd=PACKAGE, check=True)
    server = shutil.which("redis-server") or sys.exit("redis-server missing: apt-get install redis-server")
    files = assets(args.photos)
    work = Path(tempfile.mkdtemp(prefix="thumbd-queue-bench.", dir=os.environ.get("TMPDIR")))
    port = free_port()
    redis_proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                   "--dir", str(work)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                redis = Redis(port)
                redis.command("PING")
                break
            except OSError:
                time.sleep(0.05)
        folder = work / "assets"
        folder.mkdir()
        names = []
        for index in range(args.jobs):
            source = files[index % len(files)]
            name = f"{index:05d}-{source.name}"
            os.link(source, folder / name) if source.stat().st_dev == work.stat().st_dev else shutil.copy(source, folder / name)
            names.append(name)
        common = ["--assets", str(folder), "--kinds", "large", "--workers", "2", "--json"]

        # 1. Throughput, spool then queue, each into a fresh cache.
        spool = work / "spool"
        (spool / "incoming").mkdir(parents=True)
        for index, name in enumerate(names):
            (spool / "incoming" / f"{index:05d}.json").write_text(json.dumps({"asset": name}))
        spool_s, spool_summary = timed([str(THUMBD), "batch", "--spool", str(spool), "--cache", str(work / "cache-spool")] + common)
        for name in names:
            redis.command("XADD", "bench", "*", "job", json.dumps({"asset": name}))
        url = f"redis://127.0.0.1:{port}/bench"
        queue_s, queue_summary = timed([str(THUMBD), "batch", "--queue", url, "--cache", str(work / "cache-queue")] + common)
        results = redis.command("XLEN", "bench:results")

        # 2. Latency through a follower: rendered, then up to date.
        follower = subprocess.Popen([str(THUMBD), "batch", "--queue", f"redis://127.0.0.1:{port}/live", "--follow",
                                     "--cache", str(work / "cache-live")] + common,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sample = names[:args.samples]
        last = "$"
        def one(name):
            nonlocal last
            start = time.perf_counter()
            redis.command("XADD", "live", "*", "job", json.dumps({"asset": name}))
            reply = redis.command("XREAD", "BLOCK", "30000", "STREAMS", "live:results", last)
            if not reply:
                sys.exit("no result within 30 s: " + follower.stderr.read1().decode()[-500:])
            last = reply[0][1][-1][0]
            return (time.perf_counter() - start) * 1000
        # The first result: the follower's start-up (and the stream's creation) out of the timings.
        redis.command("XADD", "live", "*", "job", json.dumps({"asset": sample[0]}))
        last = redis.command("XREAD", "BLOCK", "30000", "STREAMS", "live:results", "0")[0][1][-1][0]
        rendered_ms = [one(name) for name in sample[1:]]
        repeat_ms = [one(name) for name in sample[1:]]
        follower.terminate()
        stopped = follower.wait(30)
    finally:
        redis_proc.kill()
        shutil.rmtree(work, ignore_errors=True)

    def p(values, q):
        values = sorted(values)
        return values[min(len(values) - 1, int(q * len(values)))]

    print(f"{args.jobs} jobs ({'large photos' if args.photos else 'pngsuite'}, kind large, 2 workers), same run:")
    print(f"  spool folder  {spool_s:6.2f} s  {args.jobs / spool_s:7.1f} jobs/s  (rendered {spool_summary.get('rendered')})")
    print(f"  Redis stream  {queue_s:6.2f} s  {args.jobs / queue_s:7.1f} jobs/s  (rendered {queue_summary.get('rendered')}, "
          f"{results} results)")
    print(f"  ratio queue/spool {spool_s / queue_s:5.2f}")
    print(f"XADD -> result, one job at a time through a --follow consumer ({len(rendered_ms)} jobs; ms):")
    print(f"  rendered    median {statistics.median(rendered_ms):6.1f}  p95 {p(rendered_ms, 0.95):6.1f}")
    print(f"  up to date  median {statistics.median(repeat_ms):6.1f}  p95 {p(repeat_ms, 0.95):6.1f}"
          "   (no render: what the queue adds)")
    print(f"  the follower stopped on SIGTERM with {stopped}")


if __name__ == "__main__":
    main()
