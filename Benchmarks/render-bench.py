#!/usr/bin/env python3
"""Release-mode benchmark: `thumbd render` against libvips' `vipsthumbnail`.

Both tools render the same files in the same run; see Benchmarks/README.md.
Measures throughput (images/s), median per-image process time, peak RSS and
quality (SSIM / PSNR against a float Pillow Lanczos reference). The `video` group
sets video posters against ffmpegthumbnailer and ffmpeg (posters/s, peak RSS).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def import_deps():
    """Imports numpy, Pillow and scikit-image, pip-installing them if missing."""
    try:
        import numpy, PIL, skimage  # noqa: F401
    except ImportError:
        pip = [sys.executable, "-m", "pip", "install", "--user", "numpy", "pillow", "scikit-image"]
        if subprocess.run(pip).returncode != 0:
            subprocess.run(pip + ["--break-system-packages"], check=True)
    global np, Image, ImageOps, ssim_fn, psnr_fn
    try:
        import pillow_heif  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--user", "pillow-heif"], check=True)
    import numpy as np
    import pillow_heif
    from PIL import Image, ImageOps
    pillow_heif.register_heif_opener()
    Image.MAX_IMAGE_PIXELS = None
    from skimage.metrics import structural_similarity as ssim_fn, peak_signal_noise_ratio as psnr_fn


PACKAGE = Path(__file__).resolve().parent.parent
THUMBD = PACKAGE / ".build/release/thumbd"
VIPS = "/usr/bin/vipsthumbnail"
TIME = "/usr/bin/time"
# The shared corpus sits beside the package root; scratch files go under $TMPDIR.
SHARED = PACKAGE.parent / "shared"
LARGE_PHOTOS = SHARED / "corpus/large-photos"
GEN_CORPUS = SHARED / "bench-corpus/gen_corpus.py"
BENCH_DIR = Path(tempfile.gettempdir()) / "thumbbench"
# The large photos converted to each new input format (made once, kept under $TMPDIR).
FORMATS_DIR = Path(tempfile.gettempdir()) / "thumbbench-formats"
REAL_HEIC = ["pillow_heif__pug.heic", "pillow_heif__arrow.heic", "pillow_heif__xiaomi.heic"]
INPUT_FORMATS = ("webp", "gif", "heic", "avif", "tiff", "jxl")
# JPEG XL: this many large photos as lossy (cjxl -d 1, XYB), and one of them lossless (-d 0).
JXL_LOSSY_PHOTOS = 4
RESULTS = PACKAGE / "Benchmarks/results/last-run.json"
# The decode floor (Benchmarks/decode-floor.c), compiled by gcc into $TMPDIR.
FLOOR_SOURCE = PACKAGE / "Benchmarks/decode-floor.c"
FLOOR_BIN = Path(tempfile.gettempdir()) / "thumbbench-floor" / "decode-floor"

# The video group: 1080p phone-like clips (H.264 rotated; HEVC Main10 HLG), and a 4K60 one apart.
VIDEO_DIR = SHARED / "corpus/media/video"
VIDEO_SETS = {
    "video-1080p": ["gen__phone_portrait_1080p_rot90.mp4", "androidx__hlg10-color-test.mp4"],
    "video-4k": ["androidx__portrait_4k60.mp4"],
}
# Posters a set is timed over (the clips looped through symlinks): several seconds a tool.
VIDEO_POSTERS = {"video-1080p": 96, "video-4k": 72}
FFMPEGTHUMBNAILER = "/usr/bin/ffmpegthumbnailer"
FFMPEG = "/usr/bin/ffmpeg"
FFPROBE = "/usr/bin/ffprobe"
# Issue 38's targets for thumbd: posters/s over ffmpegthumbnailer's and ffmpeg's; tree RSS at most theirs.
VIDEO_TARGETS = {"ffmpegthumbnailer": 1.2, "ffmpeg": 1.0}

# slot name -> (thumbd inline spec, vipsthumbnail arguments, output size is a filled square)
SLOTS = {
    "large": ("256x256,fit", ["--size", "256x256"], False),
    "contact-avatar@3x": ("48x48@3x,fill,circle", ["--size", "144x144", "--smartcrop", "centre"], True),
}
# slot name -> output box in pixels (for the DCT scale thumbd picks)
SLOT_PIXELS = {"large": (256, 256), "contact-avatar@3x": (144, 144)}


# ---------------------------------------------------------------- processes

def run(cmd, stdin_path=None):
    """Runs cmd under GNU time; returns (wall seconds, peak RSS in MB, exit code, stderr text).

    Not os.wait4 on a direct child: the kernel folds the forking Python's own high-water
    RSS into the child's ru_maxrss at exec. Under xargs the peak is that of the biggest
    single vipsthumbnail, not a sum over the parallel ones."""
    with tempfile.NamedTemporaryFile() as rss, tempfile.TemporaryFile() as err, \
            open(stdin_path or os.devnull, "rb") as stdin:
        start = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M", "-o", rss.name, *cmd], stdin=stdin,
                              stdout=subprocess.DEVNULL, stderr=err)
        wall = time.perf_counter() - start
        err.seek(0)
        kb = int(Path(rss.name).read_text().split()[-1])
        return wall, kb / 1024, proc.returncode, err.read().decode(errors="replace")


def tree_rss_kb(root):
    """Summed VmRSS of `root` and every process below it, from /proc (no `children` files here)."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        parents[int(name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier and pid not in tree]
        tree.update(frontier)
    total = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def tree_peak_rss_mb(cmd, stdin_path=None, interval_s=0.01):
    """Peak of the summed RSS of cmd's whole process tree, sampled every `interval_s`: what the
    machine held for the run, whatever its layout (thumbd's --jobs N in one process, or N
    vipsthumbnails at once under xargs). A separate, untimed run: the sampling costs CPU."""
    with open(stdin_path or os.devnull, "rb") as stdin:
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, tree_rss_kb(proc.pid))
            time.sleep(interval_s)
    return peak / 1024


def thumbd_cmd(files, slot, out_dir, jobs, config, binary=None, output_format="png"):
    cmd = [str(binary or THUMBD), "render", *map(str, files), "--slot", SLOTS[slot][0],
           "--out-dir", str(out_dir), "--format", output_format, "--jobs", str(jobs)]
    return cmd + (["--config", str(config)] if config else [])


def vips_cmd(slot, out_dir):
    return [VIPS, *SLOTS[slot][1], "-o", f"{out_dir}/%s.png"]


def fresh_dir(root, *parts):
    path = Path(root, *parts)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def thumbd_output(out_dir, src):
    found = sorted(Path(out_dir).glob(f"{glob_escape(src.stem)}.*.png"))
    return found[0] if found else None


def glob_escape(text):
    return "".join(f"[{c}]" if c in "[]*?" else c for c in text)


def vips_output(out_dir, src):
    path = Path(out_dir, src.stem + ".png")
    return path if path.exists() else None


# ---------------------------------------------------------------- data sets

def ensure_bench_corpus():
    if not (BENCH_DIR / "manifest.tsv").exists():
        print(f"generating {BENCH_DIR} (about 3 minutes) ...", flush=True)
        subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(BENCH_DIR), "--jobs", "2"], check=True)


def prepare_groups(tmp, quick, wanted=None):
    """Returns {group: {"files": [...], "unique": [...]}}; files are what gets timed. Only the
    `wanted` groups (all when None) are made: converting to AVIF or generating the bench corpus
    takes minutes."""
    photos = sorted(LARGE_PHOTOS.glob("*.jpg"))
    loops = math.ceil((30 if quick else 100) / len(photos))
    loop_dir = fresh_dir(tmp, "large-photos")
    looped = []
    for i in range(loops):
        for photo in photos:
            link = loop_dir / f"r{i:02d}-{photo.name}"
            link.symlink_to(photo)
            looped.append(link)
    def want(name):
        return not wanted or name in wanted
    if want("bench-jpeg") or want("bench-png"):
        ensure_bench_corpus()
    jpegs, pngs = sorted(BENCH_DIR.glob("jpg-*.jpg")), sorted(BENCH_DIR.glob("png-*.png"))
    if quick:
        jpegs, pngs = spread(jpegs, 20), spread(pngs, 16)
    groups = {
        "large-photos": {"files": looped, "unique": looped[:len(photos)]},
        "bench-jpeg": {"files": jpegs, "unique": jpegs},
        "bench-png": {"files": pngs, "unique": pngs},
    }
    for fmt in INPUT_FORMATS:
        if not want(f"input-{fmt}"):
            continue
        converted = jxl_photos(photos) if fmt == "jxl" else converted_photos(photos, fmt)
        if fmt == "heic":
            converted += [SHARED / "corpus/formats/heif" / name for name in REAL_HEIC]
        groups[f"input-{fmt}"] = {"files": converted, "unique": converted}
    return {name: group for name, group in groups.items() if want(name)}


def converted_photos(photos, fmt):
    """The large photos, upright (EXIF applied, so both tools see the same pixels), saved as
    `fmt` by Pillow (pillow-heif for HEIC): WebP q90, HEIC q90, AVIF q80, GIF 256 colours; for
    TIFF two files a photo, as archives and scanners write them: striped LZW (Pillow) and
    256-px tiles of JPEG q90 (libvips' tiffsave of that file), neither with reduced pages."""
    out_dir = FORMATS_DIR / fmt
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for photo in photos:
        target = out_dir / f"{photo.stem}.{fmt}"
        if not target.exists() or target.stat().st_mtime < photo.stat().st_mtime:
            print(f"converting {photo.name} to {fmt} ...", flush=True)
            with Image.open(photo) as im:
                upright = ImageOps.exif_transpose(im).convert("RGB")
                scratch = target.with_suffix(".tmp")
                if fmt == "gif":
                    upright.quantize(256).save(scratch, format="GIF")
                elif fmt == "heic":
                    upright.save(scratch, format="HEIF", quality=90)
                elif fmt == "avif":
                    upright.save(scratch, format="AVIF", quality=80)
                elif fmt == "tiff":
                    upright.save(scratch, format="TIFF", compression="tiff_lzw")
                else:
                    upright.save(scratch, format="WEBP", quality=90)
                scratch.rename(target)
        files.append(target)
        if fmt == "tiff":
            tiles = out_dir / f"{photo.stem}-tiles.tif"
            if not tiles.exists() or tiles.stat().st_mtime < target.stat().st_mtime:
                subprocess.run(["vips", "tiffsave", str(target), str(tiles), "--tile", "--tile-width", "256",
                                "--tile-height", "256", "--compression", "jpeg", "--Q", "90"], check=True)
            files.append(tiles)
    return files


def jxl_photos(photos):
    """JPEG XL made by cjxl from upright PNGs of the large photos: JXL_LOSSY_PHOTOS of them lossy
    (-d 1, XYB: what a camera or an export writes) and the first lossless (-d 0 -e 3: modular)."""
    out_dir = FORMATS_DIR / "jxl"
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = spread(photos, JXL_LOSSY_PHOTOS)
    files = []
    for photo, distance in [(p, "1") for p in chosen] + [(chosen[0], "0")]:
        target = out_dir / f"{photo.stem}-d{distance}.jxl"
        if not target.exists() or target.stat().st_mtime < photo.stat().st_mtime:
            print(f"converting {photo.name} to JPEG XL -d {distance} ...", flush=True)
            upright = out_dir / f"{photo.stem}.png"
            with Image.open(photo) as im:
                ImageOps.exif_transpose(im).convert("RGB").save(upright, compress_level=1)
            scratch = target.with_suffix(".tmp")
            effort = ["-e", "3"] if distance == "0" else []
            subprocess.run(["cjxl", str(upright), str(scratch), "-d", distance, *effort], check=True, capture_output=True)
            scratch.rename(target)
        files.append(target)
    return files


def readable_by_pillow(src):
    """A JPEG XL (which Pillow does not read) as djxl's PNG beside it, made once; others as they are."""
    src = Path(src)
    if src.suffix != ".jxl":
        return src
    png = src.with_suffix(".djxl.png")
    if not png.exists() or png.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["djxl", str(src), str(png)], check=True, capture_output=True)
    return png


def spread(items, k):
    """k items evenly spaced over the list (all of them if k >= len)."""
    if k >= len(items):
        return list(items)
    return [items[int(i * len(items) / k)] for i in range(k)]


def write_config(tmp, dct_margin, box_margin):
    resampling = {k: v for k, v in (("dctMargin", dct_margin), ("boxMargin", box_margin)) if v is not None}
    if not resampling:
        return None
    path = Path(tmp, "thumbd-bench.json")
    config = {"kinds": {"large": {"width": 256, "height": 256, "mode": "fit"}}, "resampling": resampling}
    path.write_text(json.dumps(config))
    return path


# ---------------------------------------------------------------- measurements

def summarize(runs, files, out, find_output):
    """Keeps the fastest of several whole-group runs (wall, rss, rc, stderr) of one command."""
    wall, _, rc, err = min(runs)
    return dict(wall_s=wall, img_per_s=len(files) / wall, peak_rss_mb=max(r[1] for r in runs),
                all_walls_s=[round(r[0], 3) for r in runs], exit_code=rc, stderr=err.strip().splitlines()[-20:],
                missing=[f.name for f in files if find_output(out, f) is None], out_dir=str(out))


def throughput(files, slot, tmp, args, config):
    """One thumbd process over all files vs vipsthumbnail (xargs -P2 and single process),
    each run args.repeat times, interleaved, fastest kept."""
    listing = Path(tmp, "files.lst")
    listing.write_bytes(b"\0".join(str(f).encode() for f in files))
    chunk = max(1, math.ceil(len(files) / (4 * args.jobs)))
    outs = {name: fresh_dir(tmp, "out", name) for name in ("thumbd", "xargs", "single")}
    commands = {
        "thumbd": (thumbd_cmd(files, slot, outs["thumbd"], args.jobs, config), None),
        "xargs": (["xargs", "-0", f"-P{args.jobs}", "-n", str(chunk)] + vips_cmd(slot, outs["xargs"]), listing),
        "single": (vips_cmd(slot, outs["single"]) + [str(f) for f in files], None),
    }
    runs = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, (cmd, stdin_path) in commands.items():
            runs[name].append(run(cmd, stdin_path))
    finders = {"thumbd": thumbd_output, "xargs": vips_output, "single": vips_output}
    summary = {name: summarize(runs[name], files, outs[name], finders[name]) for name in commands}
    variants = {name: summary[name] for name in ("xargs", "single")}
    best = min(variants, key=lambda v: variants[v]["wall_s"])
    for name in ("thumbd", best):
        summary[name]["tree_rss_mb"] = tree_peak_rss_mb(*commands[name])
    return {"thumbd": summary["thumbd"], "vips": dict(variants[best], variant=best, chunk=chunk, variants=variants)}


def median_ms(files, slot, tmp, config):
    """Median wall time of one process per image, for each tool."""
    times = {"thumbd": [], "vips": []}
    out = fresh_dir(tmp, "out", "per-image")
    for f in files:
        times["thumbd"].append(run(thumbd_cmd([f], slot, out, 1, config))[0])
        times["vips"].append(run(vips_cmd(slot, out) + [str(f)])[0])
    return {tool: 1000 * statistics.median(t) for tool, t in times.items()}


def reference(src, size, fill):
    """Float32 RGB Pillow Lanczos reference of `size` (w, h): no 8-bit rounding."""
    with Image.open(readable_by_pillow(src)) as im:
        rgb = ImageOps.exif_transpose(im).convert("RGB")
    W, H = rgb.size
    w, h = size
    box = (0.0, 0.0, float(W), float(H))
    if fill:
        scale = max(w / W, h / H)
        cw, ch = w / scale, h / scale
        x0, y0 = max(0.0, (W - cw) / 2), max(0.0, (H - ch) / 2)  # clamp float noise
        box = (x0, y0, min(float(W), x0 + cw), min(float(H), y0 + ch))
    channels = [c.convert("F").resize(size, Image.LANCZOS, box=box) for c in rgb.split()]
    return np.stack([np.asarray(c, dtype=np.float32) for c in channels], axis=-1)


def compare(output, ref, fill):
    """(SSIM, PSNR) of an 8-bit PNG output's RGB against the float reference.

    For the avatar only pixels inside a disc of radius 0.45*size count."""
    with Image.open(output) as im:
        got = np.asarray(im.convert("RGBA"), dtype=np.float64)[..., :3]
    ref = ref.astype(np.float64)
    h, w = ref.shape[:2]
    mask = np.ones((h, w), bool)
    if fill:
        yy, xx = np.mgrid[0:h, 0:w]
        mask = np.hypot(yy + 0.5 - h / 2, xx + 0.5 - w / 2) < 0.45 * min(w, h)
    _, smap = ssim_fn(ref, got, channel_axis=-1, data_range=255, full=True)
    inner = np.zeros_like(mask)
    inner[3:-3, 3:-3] = True  # skimage's own border crop for win_size 7
    ssim = float(smap.mean(axis=-1)[mask & inner].mean())
    if fill:
        mse = float(((ref - got)[mask] ** 2).mean())
        psnr = 10 * math.log10(255 ** 2 / mse) if mse else math.inf
    else:
        psnr = float(psnr_fn(ref, got, data_range=255))
    return ssim, psnr


def quality(files, slot, dirs):
    """Mean SSIM/PSNR per tool over files, plus per-image rows and size mismatches."""
    fill = SLOTS[slot][2]
    rows, mismatches = [], []
    for f in files:
        outputs = {"thumbd": thumbd_output(dirs["thumbd"], f), "vips": vips_output(dirs["vips"], f)}
        sizes = {}
        row = {"file": f.name}
        for tool, path in outputs.items():
            if path is None:
                continue
            with Image.open(path) as im:
                sizes[tool] = im.size
            row[tool] = compare(path, reference(f, sizes[tool], fill), fill)
        if len(set(sizes.values())) > 1:
            mismatches.append({"file": f.name, **{t: "x".join(map(str, s)) for t, s in sizes.items()}})
        rows.append(row)
    means = {}
    for tool in ("thumbd", "vips"):
        scores = [r[tool] for r in rows if tool in r]
        if scores:
            means[tool] = (statistics.mean(s for s, _ in scores), statistics.mean(p for _, p in scores))
    return means, rows, mismatches


# ---------------------------------------------------------------- decode floor

def build_floor():
    """Compiles Benchmarks/decode-floor.c (gcc -O2, libjpeg-turbo) into $TMPDIR when it is newer."""
    if not FLOOR_BIN.exists() or FLOOR_BIN.stat().st_mtime < FLOOR_SOURCE.stat().st_mtime:
        FLOOR_BIN.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-O2", "-o", str(FLOOR_BIN), str(FLOOR_SOURCE), "-ljpeg"], check=True)
    return FLOOR_BIN


def dct_denominator(path, slot, dct_margin=2.0):
    """The DCT scale thumbd's ShrinkPlan picks for `slot`: the largest of 8, 4, 2 that still leaves
    `dct_margin` of reduction (source pixels per output pixel along the less reduced axis)."""
    with Image.open(path) as im:
        width, height = im.size  # stored size; the reduction is the same in the displayed frame
    box_w, box_h = SLOT_PIXELS[slot]
    if SLOTS[slot][2]:  # fill: a centred crop of the output's aspect
        crop_w, crop_h = min(width, height * box_w / box_h), min(height, width * box_h / box_w)
        reduction = min(crop_w / box_w, crop_h / box_h)
    else:
        scale = min(box_w / width, box_h / height, 1)
        reduction = min(width / max(1, round(width * scale)), height / max(1, round(height * scale)))
    return next((d for d in (8, 4, 2) if reduction / d >= dct_margin), 1)


def timed_together(commands):
    """Runs the commands at once; returns (wall seconds, CPU seconds summed over them (user +
    system, from wait4), [(exit code, stderr tail)])."""
    start = time.perf_counter()
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for cmd in commands]
    cpu, results = 0.0, []
    for proc in procs:
        err = proc.stderr.read().decode(errors="replace")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        results.append((proc.returncode, err.strip()[-300:]))
    return time.perf_counter() - start, cpu, results


def floor_commands(files, scales, jobs):
    """`jobs` decode-floor command lines over an even split of the files, each at its scale."""
    commands = []
    for part in (files[i::jobs] for i in range(jobs)):
        cmd = [str(FLOOR_BIN)]
        for f in part:
            cmd += ["-s", str(scales[f]), str(f)]
        commands.append(cmd)
    return commands


def looped(files, times, tmp, name):
    """The files `times` over, through symlinks (as large-photos is looped): a group long enough
    that a process's start-up (~20 ms for thumbd) does not weigh on its throughput."""
    folder = fresh_dir(tmp, "loops", name)
    links = []
    for i in range(times):
        for f in files:
            link = folder / f"r{i:02d}-{f.name}"
            link.symlink_to(f)
            links.append(link)
    return links


# (group, slot, target of thumbd over the floor, target of thumbd over --baseline-thumbd)
FLOOR_ROWS = [
    ("bench-jpeg", "large", 0.9, None),
    ("bench-jpeg", "contact-avatar@3x", 1.0, None),
    ("bench-prog", "contact-avatar@3x", None, 4.0),
]


def floor_comparison(tmp, args):
    """thumbd render --jobs N against N decode-floor processes (same files, same run, each at the
    DCT scale thumbd picks), and against a baseline thumbd binary when given."""
    build_floor()
    ensure_bench_corpus()
    jpegs = sorted(BENCH_DIR.glob("jpg-*.jpg"))
    progressive = sorted(BENCH_DIR.glob("jpg-prog-*.jpg"))
    groups = {"bench-jpeg": spread(jpegs, 20) if args.quick else jpegs,
              "bench-prog": progressive if args.quick else looped(progressive, 3, tmp, "bench-prog")}
    rows = []
    for group, slot, floor_target, baseline_target in FLOOR_ROWS:
        files = groups[group]
        warm_cache(files)
        scales = {f: dct_denominator(f, slot) for f in files}
        binaries = {"thumbd": THUMBD if args.thumbd is None else args.thumbd}
        if args.baseline_thumbd:
            binaries["baseline"] = args.baseline_thumbd
        print(f"floor: {group:10} {slot:18} {len(files)} images at 1/{'+1/'.join(map(str, sorted(set(scales.values()))))} ...",
              flush=True)
        runs = {name: [] for name in [*binaries, "floor"]}
        failures = []
        for _ in range(args.repeat):
            for name, binary in binaries.items():
                out = fresh_dir(tmp, "floor-out", name)
                # The daemon's default output (auto: JPEG q85 for `large`, PNG for the circle avatar).
                wall, cpu, results = timed_together([thumbd_cmd(files, slot, out, args.jobs, None, binary, "auto")])
                runs[name].append((wall, cpu))
                failures += [f"{name}: exit {rc}: {err}" for rc, err in results if rc]
            wall, cpu, results = timed_together(floor_commands(files, scales, args.jobs))
            runs["floor"].append((wall, cpu))
            failures += [f"floor: exit {rc}: {err}" for rc, err in results if rc]
        wall = {name: min(w for w, _ in r) for name, r in runs.items()}
        cpu = {name: min(c for _, c in r) for name, r in runs.items()}
        row = {"group": group, "slot": slot, "images": len(files), "scales": sorted(set(scales.values())),
               "img_per_s": {name: len(files) / w for name, w in wall.items()},
               "cpu_ms_per_image": {name: 1000 * c / len(files) for name, c in cpu.items()},
               "runs": {name: [(round(w, 3), round(c, 3)) for w, c in r] for name, r in runs.items()},
               "thumbd_over_floor": wall["floor"] / wall["thumbd"], "cpu_thumbd_over_floor": cpu["floor"] / cpu["thumbd"],
               "floor_target": floor_target, "baseline_target": baseline_target, "failures": failures}
        if "baseline" in wall:
            row["thumbd_over_baseline"] = wall["baseline"] / wall["thumbd"]
            row["cpu_thumbd_over_baseline"] = cpu["baseline"] / cpu["thumbd"]
        rows.append(row)
    return rows


def print_floor(rows, args):
    print(f"\nfloor: thumbd render --jobs {args.jobs} vs {args.jobs} decode-floor processes at the same DCT scale, "
          f"thumbd's default output (best of {args.repeat}; cpu = user + system ms an image)")
    head = (f"{'group':10} {'slot':18} {'files':>5} {'scale':>7} {'floor/s':>7} {'thumbd/s':>8} {'t/floor':>7} "
            f"{'cpu':>5} {'target':>6}  {'base/s':>6} {'t/base':>6} {'cpu':>5} {'target':>6}")
    print(head + "\n" + "-" * len(head))
    for r in rows:
        ips, cpu = r["img_per_s"], r["cpu_ms_per_image"]
        scale = "+".join(f"1/{d}" for d in r["scales"])
        line = (f"{r['group']:10} {r['slot']:18} {r['images']:5} {scale:>7} {ips['floor']:7.1f} {ips['thumbd']:8.1f} "
                f"{r['thumbd_over_floor']:7.2f} {r['cpu_thumbd_over_floor']:5.2f} {r['floor_target'] or '':>6}")
        if "baseline" in ips:
            line += (f"  {ips['baseline']:6.1f} {r['thumbd_over_baseline']:6.2f} {r['cpu_thumbd_over_baseline']:5.2f} "
                     f"{r['baseline_target'] or '':>6}")
        print(line)
        print(f"{'':10} {'':18} {'':5} {'':>7} cpu ms/image: floor {cpu['floor']:.1f}, thumbd {cpu['thumbd']:.1f}"
              + (f", baseline {cpu['baseline']:.1f}" if "baseline" in cpu else ""))
        for failure in r["failures"]:
            print(f"! {r['group']} {r['slot']} {failure}")


# ---------------------------------------------------------------- videos

def poster_seconds(path):
    """Where thumbd seeks for a poster: 10% of the clip, at most 30 s (`PosterSearch`), with the
    duration as thumbd reads it (the video stream's, else the container's), here from ffprobe."""
    def probe(*what):
        out = subprocess.run([FFPROBE, "-v", "error", *what, "-of", "csv=p=0", str(path)],
                             capture_output=True, text=True).stdout.split()
        try:
            return float(out[0])
        except (IndexError, ValueError):
            return None
    duration = probe("-select_streams", "v:0", "-show_entries", "stream=duration") or \
        probe("-show_entries", "format=duration")
    return min(duration * 0.1, 30.0) if duration and duration > 0 else 0.0


def video_commands(files, seek, outs, jobs):
    """The three tools over the same posters, `jobs` at a time: one `thumbd render --jobs N`
    process (its N sandboxed video workers decode), and `xargs -P N` of one ffmpegthumbnailer or
    ffmpeg a poster (each through `sh -c 'exec ...'`: one dash start, then the tool in its place).
    Returns {name: (cmd, stdin listing, output finder)}."""
    def listing(name, items):
        path = Path(outs[name]).parent / f"{name}.lst"
        path.write_bytes(b"\0".join(str(i).encode() for i in items))
        return path
    fft = listing("ffmpegthumbnailer", [x for f in files for x in (f, Path(outs["ffmpegthumbnailer"], f.stem + ".png"))])
    ff = listing("ffmpeg", [x for f in files for x in (f"{seek[f]:.6f}", f, Path(outs["ffmpeg"], f.stem + ".png"))])
    return {
        "thumbd": (thumbd_cmd(files, "large", outs["thumbd"], jobs, None), None, thumbd_output),
        "ffmpegthumbnailer": (["xargs", "-0", f"-P{jobs}", "-n2", "sh", "-c",
                               f'exec {FFMPEGTHUMBNAILER} -s 256 -i "$0" -o "$1"'], fft, vips_output),
        "ffmpeg": (["xargs", "-0", f"-P{jobs}", "-n3", "sh", "-c",
                    f'exec {FFMPEG} -v error -ss "$0" -i "$1" -frames:v 1 -vf scale=256:-2 -y "$2"'], ff, vips_output),
    }


def output_sizes(out_dir, files, finder):
    """{clip: "WxH, N-bit"} of one PNG output of each distinct clip, from its IHDR."""
    sizes = {}
    for f in files:
        clip = f.resolve().name
        path = finder(out_dir, f)
        if clip in sizes or path is None:
            continue
        head = path.read_bytes()[:26]
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        sizes[clip] = f"{width}x{height} {head[24]}-bit"
    return sizes


def video_comparison(tmp, args):
    """Posters/s of thumbd render against ffmpegthumbnailer and ffmpeg on the same looped clips,
    whole-set runs interleaved, fastest of args.repeat kept; then one untimed run each for the
    process tree's summed peak RSS."""
    rows = []
    for name, clips in VIDEO_SETS.items():
        sources = [(VIDEO_DIR / c).resolve() for c in clips]
        posters = VIDEO_POSTERS[name] // (3 if args.quick else 1)
        files = looped(sources, math.ceil(posters / len(sources)), tmp, name)
        seek = {f: poster_seconds(f) for f in sources}
        seek.update({f: seek[f.resolve()] for f in files})
        warm_cache(sources)
        outs = {tool: fresh_dir(tmp, "video-out", name, tool) for tool in ("thumbd", "ffmpegthumbnailer", "ffmpeg")}
        commands = video_commands(files, seek, outs, args.jobs)
        print(f"video: {name:12} {len(files)} posters of {', '.join(clips)} ...", flush=True)
        runs = {tool: [] for tool in commands}
        for _ in range(args.repeat):
            for tool, (cmd, stdin_path, _) in commands.items():
                runs[tool].append(run(cmd, stdin_path))
        row = {"set": name, "clips": clips, "posters": len(files), "jobs": args.jobs,
               "seek_s": {f.name: round(seek[f], 4) for f in sources}, "tools": {}}
        for tool, (cmd, stdin_path, finder) in commands.items():
            m = summarize(runs[tool], files, outs[tool], finder)
            m["posters_per_s"] = m.pop("img_per_s")
            m["tree_rss_mb"] = tree_peak_rss_mb(cmd, stdin_path)
            m["output_sizes"] = output_sizes(outs[tool], files, finder)
            m.pop("out_dir")
            m["command"] = cmd
            row["tools"][tool] = m
        t = row["tools"]["thumbd"]
        row["ratios"] = {peer: {"posters_per_s": t["posters_per_s"] / row["tools"][peer]["posters_per_s"],
                                "tree_rss": t["tree_rss_mb"] / row["tools"][peer]["tree_rss_mb"],
                                "peak_rss": t["peak_rss_mb"] / row["tools"][peer]["peak_rss_mb"],
                                "target": target}
                         for peer, target in VIDEO_TARGETS.items()}
        rows.append(row)
    return rows


def print_video(rows, args):
    print(f"\nvideo: posters/s, thumbd render --jobs {args.jobs} vs xargs -P{args.jobs} of one peer process a poster "
          f"(best of {args.repeat}); peak_rss = GNU time of the run (largest single process), "
          f"tree_rss = summed RSS of the whole process tree, thumbd's workers included")
    head = (f"{'set':12} {'posters':>7} {'tool':18} {'posters/s':>9} {'peak_rss_MB':>11} {'tree_rss_MB':>11} "
            f"{'t/x speed':>9} {'target':>6} {'t/x tree':>8}  output")
    print(head + "\n" + "-" * len(head))
    for r in rows:
        for tool, m in r["tools"].items():
            ratio = r["ratios"].get(tool)
            cols = (f"{ratio['posters_per_s']:9.2f} {'>=' + str(ratio['target']):>6} {ratio['tree_rss']:8.2f}"
                    if ratio else f"{'':9} {'':6} {'':8}")
            print(f"{r['set']:12} {r['posters']:7} {tool:18} {m['posters_per_s']:9.2f} {m['peak_rss_mb']:11.1f} "
                  f"{m['tree_rss_mb']:11.1f} {cols}  {', '.join(sorted(set(m['output_sizes'].values())))}")
        print(f"{'':12} {'':7} seek {', '.join(f'{c} {s} s' for c, s in r['seek_s'].items())}")
        for tool, m in r["tools"].items():
            if m["exit_code"] or m["missing"]:  # (ffmpegthumbnailer's swscaler warnings are only in the JSON)
                print(f"! {r['set']} {tool}: exit {m['exit_code']}, {len(m['missing'])} missing outputs "
                      f"{m['missing'][:5]}; stderr tail: {m['stderr'][-3:]}")


# ---------------------------------------------------------------- main

def build():
    print("swift build -c release ...", flush=True)
    subprocess.run(["swift", "build", "-c", "release"], cwd=PACKAGE, check=True,
                   stdout=subprocess.DEVNULL)


def warm_cache(files):
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass


def bench_group(name, group, slot, tmp, args, config):
    files = group["files"]
    print(f"{name:14} {slot:18} {len(files)} images ...", flush=True)
    warm_cache(group["unique"])
    tp = throughput(files, slot, tmp, args, config)
    per_image = median_ms(spread(files, args.timing_sample), slot, tmp, config)
    dirs = {tool: tp[tool]["out_dir"] for tool in tp}
    means, rows, mismatches = quality(spread(group["unique"], args.quality_sample), slot, dirs)
    result = {"group": name, "slot": slot, "images": len(files), "quality_rows": rows,
              "size_mismatches": mismatches}
    for tool in ("thumbd", "vips"):
        ssim, psnr = means.get(tool, (math.nan, math.nan))
        result[tool] = dict(tp[tool], median_ms=per_image[tool], ssim=ssim, psnr_db=psnr)
    return result


def print_table(results):
    head = (f"{'group':14} {'slot':18} {'tool':11} {'img/s':>7} {'median_ms':>9} {'peak_rss_MB':>11} {'tree_rss_MB':>11} "
            f"{'ssim':>7} {'psnr_dB':>7}")
    print("\n" + head + "\n" + "-" * len(head))
    for r in results:
        for tool in ("thumbd", "vips"):
            m = r[tool]
            label = tool if tool == "thumbd" else f"vips/{m['variant']}"
            print(f"{r['group']:14} {r['slot']:18} {label:11} {m['img_per_s']:7.1f} {m['median_ms']:9.0f} "
                  f"{m['peak_rss_mb']:11.1f} {m.get('tree_rss_mb', math.nan):11.1f} {m['ssim']:7.4f} {m['psnr_db']:7.2f}")
        t, v = r["thumbd"], r["vips"]
        print(f"{'':14} {'':18} {'ratio t/v':11} {t['img_per_s'] / v['img_per_s']:7.2f} "
              f"{t['median_ms'] / v['median_ms']:9.2f} {t['peak_rss_mb'] / v['peak_rss_mb']:11.2f} "
              f"{t.get('tree_rss_mb', math.nan) / v.get('tree_rss_mb', math.nan):11.2f}")


def print_oddities(results):
    for r in results:
        where = f"{r['group']} {r['slot']}"
        for tool in ("thumbd", "vips"):
            m = r[tool]
            if m["exit_code"] or m["missing"] or m["stderr"]:
                print(f"! {where} {tool}: exit {m['exit_code']}, {len(m['missing'])} missing outputs "
                      f"{m['missing'][:5]}; stderr tail: {m['stderr'][-3:]}")
        for mm in r["size_mismatches"]:
            print(f"! {where}: size differs {mm}")
        for row in r["quality_rows"]:
            for tool in ("thumbd", "vips"):
                if tool in row and (row[tool][0] < r[tool]["ssim"] - 0.05 or row[tool][1] < r[tool]["psnr_db"] - 5):
                    print(f"! {where} {tool}: quality outlier {row['file']} "
                          f"ssim {row[tool][0]:.4f} psnr {row[tool][1]:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-build", action="store_true", help="use the existing .build/release/thumbd")
    parser.add_argument("--quick", action="store_true", help="smaller groups and samples (~2 min)")
    parser.add_argument("--jobs", type=int, default=2, help="thumbd --jobs and xargs -P (default 2)")
    parser.add_argument("--dct-margin", type=float, help="thumbd resampling.dctMargin (via a temp config)")
    parser.add_argument("--box-margin", type=float, help="thumbd resampling.boxMargin (via a temp config)")
    parser.add_argument("--group", action="append",
                        choices=["large-photos", "bench-jpeg", "bench-png"] + [f"input-{f}" for f in INPUT_FORMATS]
                        + ["video"],
                        help="only these groups (repeatable)")
    parser.add_argument("--slot", action="append", choices=list(SLOTS), help="only these slots (repeatable)")
    parser.add_argument("--repeat", type=int, help="whole-group runs per tool, best kept (default 3, quick 1)")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    parser.add_argument("--floor-only", action="store_true", help="only the decode-floor comparison")
    parser.add_argument("--no-floor", action="store_true", help="skip the decode-floor comparison")
    parser.add_argument("--thumbd", type=Path, help="the thumbd binary to measure (default .build/release/thumbd)")
    parser.add_argument("--baseline-thumbd", type=Path,
                        help="another thumbd binary (e.g. main's) for the floor rows' before/after column")
    args = parser.parse_args()
    args.timing_sample = 8 if args.quick else 20
    args.quality_sample = 6 if args.quick else 12
    args.repeat = args.repeat or (1 if args.quick else 3)

    import_deps()
    if args.thumbd:
        global THUMBD
        THUMBD = args.thumbd.resolve()
    elif not args.no_build:
        build()
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.2f} before start; timings will be noisy", flush=True)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="render-bench-") as tmp:
        config = write_config(tmp, args.dct_margin, args.box_margin)
        groups = {} if args.floor_only else prepare_groups(tmp, args.quick, args.group)
        results = [] if args.floor_only else [
            bench_group(name, group, slot, tmp, args, config)
            for name, group in groups.items() if not args.group or name in args.group
            for slot in SLOTS if not args.slot or slot in args.slot]
        video = video_comparison(tmp, args) if not args.floor_only and (not args.group or "video" in args.group) else []
        floor = [] if args.no_floor else floor_comparison(tmp, args)
    for r in results:
        for tool in ("thumbd", "vips"):
            r[tool].pop("out_dir", None)
            for v in r[tool].get("variants", {}).values():
                v.pop("out_dir", None)
    if results:
        print_table(results)
        print_oddities(results)
    if video:
        print_video(video, args)
    if floor:
        print_floor(floor, args)
    print(f"\nquality: mean over {args.quality_sample} images per group (large-photos: its distinct photos); "
          f"median_ms over {args.timing_sample}; took {time.time() - started:.0f} s")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "quick": args.quick, "jobs": args.jobs,
            "load_before": load, "load_after": os.getloadavg()[0], "seconds": time.time() - started,
            "dct_margin": args.dct_margin, "box_margin": args.box_margin,
            "timing_sample": args.timing_sample, "repeat": args.repeat, "quality_sample": args.quality_sample,
            "vips_version": subprocess.run([VIPS, "--vips-version"], capture_output=True, text=True).stdout.strip(),
            "git_head": subprocess.run(["git", "rev-parse", "HEAD"], cwd=PACKAGE, capture_output=True,
                                       text=True).stdout.strip()}
    meta["thumbd"] = str(THUMBD)
    meta["baseline_thumbd"] = str(args.baseline_thumbd) if args.baseline_thumbd else None
    if video:
        meta["ffmpeg_version"] = subprocess.run([FFMPEG, "-version"], capture_output=True, text=True).stdout.split("\n")[0]
        meta["ffmpegthumbnailer_version"] = subprocess.run([FFMPEGTHUMBNAILER, "-v"], capture_output=True,
                                                           text=True).stdout.strip()
    args.json.write_text(json.dumps({"meta": meta, "results": results, "floor": floor, "video": video},
                                    indent=1, default=str))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
