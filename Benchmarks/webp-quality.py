#!/usr/bin/env python3
"""WebP against JPEG q85 on the large-photos set, per sample kind: the WebP quality whose SSIM
equals JPEG q85's, the bytes saved there and at the configured default, and the time WebP adds.

    python3 Benchmarks/webp-quality.py                  # qualities 60-90, every sample kind
    python3 Benchmarks/webp-quality.py --quick          # 3 photos, 4 kinds
    python3 Benchmarks/webp-quality.py --mode auto      # webpMode auto instead of lossy

Every thumbnail is rendered by `thumbd render` (.build/release/thumbd, built with
`swift build -c release --product thumbd` when missing or with --build) from the sample
config (Samples/thumbd.json) with `encoding.webpQuality` set per run: a PNG (the unencoded
pixels), a JPEG at q85 and a WebP at each quality. SSIM is Wang et al.'s (11x11 Gaussian,
sigma 1.5, on 0-255 values) per RGB channel, averaged, of each encoded thumbnail against the
PNG, all composited over white (a masked kind's JPEG is flattened over white by thumbd). Time:
one `thumbd render --jobs 1` of every photo per kind and format, the fastest of --repeat runs;
the decode is the same for both formats, so the difference divided by the photo count is what
WebP's encode costs more than JPEG's per thumbnail.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

PACKAGE = Path(__file__).resolve().parent.parent
THUMBD = PACKAGE / ".build/release/thumbd"
SAMPLE_CONFIG = PACKAGE / "Samples/thumbd.json"
PHOTOS = PACKAGE.parent / "shared/corpus/large-photos"
ENCODER_SETTINGS = PACKAGE / "Sources/ThumbImaging/Thumbnailing/EncoderSettings.swift"


def built_in_quality():
    """The default `webpQuality` of EncoderSettings, read from its source (the run times it)."""
    import re
    match = re.search(r"var webpQuality: Int = (\d+)", ENCODER_SETTINGS.read_text())
    return int(match.group(1)) if match else 80


def gaussian_window(size=11, sigma=1.5):
    x = np.arange(size) - size // 2
    k = np.exp(-(x ** 2) / (2 * sigma ** 2))
    return k / k.sum()


def blur(plane, k):
    """Separable 'valid' convolution (no padding), as scikit-image's SSIM crops its border."""
    rows = np.apply_along_axis(lambda r: np.convolve(r, k, mode="valid"), 1, plane)
    return np.apply_along_axis(lambda c: np.convolve(c, k, mode="valid"), 0, rows)


def ssim_plane(x, y):
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    k = gaussian_window()
    mx, my = blur(x, k), blur(y, k)
    sxx, syy, sxy = blur(x * x, k) - mx * mx, blur(y * y, k) - my * my, blur(x * y, k) - mx * my
    return float((((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))).mean())


def over_white(path):
    im = Image.open(path).convert("RGBA")
    white = Image.new("RGBA", im.size, (255, 255, 255, 255))
    return np.asarray(Image.alpha_composite(white, im).convert("RGB")).astype(np.float64)


def ssim(reference, test):
    a, b = over_white(reference), over_white(test)
    if a.shape != b.shape:
        raise SystemExit(f"{test}: {b.shape} against the reference's {a.shape}")
    return float(np.mean([ssim_plane(a[..., c], b[..., c]) for c in range(3)]))


def sample_kinds():
    """Every kind of the sample config at every scale it declares: contact-avatar@2x, ..."""
    config = json.loads(SAMPLE_CONFIG.read_text())
    kinds = []
    for name, kind in config["kinds"].items():
        for scale in kind.get("scales", [1]):
            kinds.append(f"{name}@{scale}x")
    return config, kinds


def render(photos, kind, out_dir, fmt, config_path, quality=None):
    """One `thumbd render --jobs 1` of every photo; returns wall seconds."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [str(THUMBD), "render", *map(str, photos), "--slot", kind, "--out-dir", str(out_dir),
           "--format", fmt, "--jobs", "1", "--config", str(config_path)]
    if quality is not None:
        cmd += ["--quality", str(quality)]
    start = time.perf_counter()
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"thumbd render failed ({result.returncode}): {result.stderr.strip()}")
    return elapsed


def outputs(out_dir, photos, kind, extension):
    return [out_dir / f"{photo.stem}.{kind}.{extension}" for photo in photos]


def equal_ssim_quality(points, target):
    """The quality (linearly interpolated) where mean SSIM reaches `target`, and its bytes."""
    points = sorted(points)
    for (q0, s0, b0), (q1, s1, b1) in zip(points, points[1:]):
        if s0 <= target <= s1 and s1 > s0:
            t = (target - s0) / (s1 - s0)
            return q0 + t * (q1 - q0), b0 + t * (b1 - b0)
    if target < points[0][1]:
        return points[0][0], points[0][2]
    return None, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qualities", default="60,65,70,75,80,85,90")
    parser.add_argument("--mode", default="lossy", choices=["lossy", "auto", "lossless"])
    parser.add_argument("--kind", action="append", help="a kind@scale to run (repeatable; default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per kind and format (fastest kept)")
    parser.add_argument("--quick", action="store_true", help="3 photos, 4 kinds, qualities 70-85")
    parser.add_argument("--build", action="store_true", help="swift build -c release --product thumbd first")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    args = parser.parse_args()

    if args.build or not THUMBD.exists():
        subprocess.run(["swift", "build", "-c", "release", "--product", "thumbd"], cwd=PACKAGE, check=True)
    photos = sorted(PHOTOS.glob("*.jpg"))
    if not photos:
        raise SystemExit(f"no photos in {PHOTOS}")
    config, kinds = sample_kinds()
    qualities = [int(q) for q in args.qualities.split(",")]
    if args.quick:
        photos, qualities = photos[:3], [70, 75, 80, 85]
        kinds = ["contact-avatar@3x", "product-row@3x", "product-grid@3x", "large@1x"]
    kinds = args.kind or kinds
    default_quality = config.get("encoding", {}).get("webpQuality") or built_in_quality()
    if default_quality not in qualities:
        qualities = sorted(qualities + [default_quality])

    scratch = Path(tempfile.mkdtemp(prefix="webp-quality-", dir=os.environ.get("TMPDIR")))
    configs = {}
    for quality in qualities:
        variant = json.loads(json.dumps(config))
        variant.setdefault("encoding", {}).update({"webpQuality": quality, "webpMode": args.mode})
        configs[quality] = scratch / f"config-{quality}.json"
        configs[quality].write_text(json.dumps(variant))
    print(f"{len(photos)} photos, {len(kinds)} kinds, WebP {args.mode} at {qualities}; scratch {scratch}")

    table = []
    for kind in kinds:
        reference_dir, jpeg_dir = scratch / kind / "png", scratch / kind / "jpeg85"
        render(photos, kind, reference_dir, "png", SAMPLE_CONFIG)
        jpeg_seconds = min(render(photos, kind, jpeg_dir, "jpeg", SAMPLE_CONFIG, 85) for _ in range(args.repeat))
        references = outputs(reference_dir, photos, kind, "png")
        jpegs = outputs(jpeg_dir, photos, kind, "jpg")
        jpeg_ssim = float(np.mean([ssim(r, j) for r, j in zip(references, jpegs)]))
        jpeg_bytes = float(np.mean([j.stat().st_size for j in jpegs]))
        points, seconds = [], {}
        for quality in qualities:
            webp_dir = scratch / kind / f"webp{quality}"
            timed = quality == default_quality
            runs = args.repeat if timed else 1
            best = min(render(photos, kind, webp_dir, "webp", configs[quality]) for _ in range(runs))
            if timed:
                seconds[quality] = best
            webps = outputs(webp_dir, photos, kind, "webp")
            points.append((quality, float(np.mean([ssim(r, w) for r, w in zip(references, webps)])),
                           float(np.mean([w.stat().st_size for w in webps]))))
        equal_quality, equal_bytes = equal_ssim_quality(points, jpeg_ssim)
        row = {"kind": kind, "jpeg85_bytes": round(jpeg_bytes), "jpeg85_ssim": round(jpeg_ssim, 4),
               "webp": [{"quality": q, "ssim": round(s, 4), "bytes": round(b)} for q, s, b in points],
               "equal_ssim_quality": equal_quality and round(equal_quality, 1),
               "equal_ssim_saving": equal_bytes and round(1 - equal_bytes / jpeg_bytes, 3)}
        for quality, best in seconds.items():
            row["timed_quality"] = quality
            row["extra_encode_ms"] = round((best - jpeg_seconds) / len(photos) * 1000, 2)
            row["jpeg_render_ms"] = round(jpeg_seconds / len(photos) * 1000, 1)
        table.append(row)
        at = {q: (s, b) for q, s, b in points}
        timed_quality = row.get("timed_quality")
        at_default = at.get(timed_quality)
        print(f"{kind:18s} jpeg85 {jpeg_bytes:7.0f} B ssim {jpeg_ssim:.4f} | equal ssim at q"
              f"{'%.1f' % equal_quality if equal_quality else ' n/a'}: "
              f"{'%+.1f%%' % (-100 * row['equal_ssim_saving']) if equal_bytes else 'n/a'} bytes"
              + (f" | q{timed_quality}: {at_default[1]:7.0f} B ({100 * (at_default[1] / jpeg_bytes - 1):+.1f}%) "
                 f"ssim {at_default[0]:.4f}, +{row['extra_encode_ms']:.1f} ms/thumbnail over JPEG "
                 f"({row['jpeg_render_ms']:.0f} ms a JPEG render)" if at_default else ""))
        print("                   " + "  ".join(f"q{q}: {s:.4f} {b:.0f} B" for q, s, b in points))
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
