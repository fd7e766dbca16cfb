#!/usr/bin/env python3
"""AVIF output against JPEG q85 on ../shared/corpus/large-photos, per sample kind.

For each kind: thumbd renders every photo (one process, --jobs 1) as PNG at zlib level 0 (the
baseline: decode + resize + a near-free encode, and the lossless reference pixels), as JPEG q85,
and as AVIF over a sweep of avifQuality (at avifSpeed 6) and of avifSpeed (at the chosen
quality). Encode CPU time per thumbnail = the run's CPU time less the baseline's, over the photo
count. SSIM is against the PNG pixels (over white; luma, skimage's default window). "AVIF at
equal SSIM" is the lowest avifQuality whose mean SSIM reaches JPEG q85's.

    python3 Benchmarks/avif-quality.py [--quick]      (after swift build -c release)
"""
import json, os, resource, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np
from PIL import Image
from skimage.metrics import structural_similarity

root = Path(__file__).resolve().parent.parent
thumbd = root / ".build/release/thumbd"
photos = sorted(p for p in (root / "../shared/corpus/large-photos").resolve().glob("*.jpg"))
sample = json.loads((root / "Samples/thumbd.json").read_text())
quick = "--quick" in sys.argv
kinds = ["contact-avatar@2x", "contact-avatar@3x", "product-grid@3x", "large"] + ([] if quick else ["xx-large"])
qualities = [40, 50, 60, 70] if quick else [30, 40, 50, 60, 70, 80]
speeds = [6, 8, 9] if quick else [4, 6, 8, 9]


def render(kind, encoding, out):
    config = dict(sample)
    config["encoding"] = encoding
    config_path = out / "config.json"
    config_path.write_text(json.dumps(config))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([str(thumbd), "render", *map(str, photos), "--slot", kind, "--config", str(config_path),
                    "--out-dir", str(out), "--jobs", "1"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    files = {}
    for photo in photos:
        found = sorted(out.glob(photo.stem + "." + kind.split("@")[0] + "@*"))
        files[photo.stem] = found[-1]
    return cpu, files


def pixels(path):
    image = Image.open(path).convert("RGBA")
    white = Image.new("RGBA", image.size, (255, 255, 255, 255))
    return np.asarray(Image.alpha_composite(white, image).convert("L"), dtype=np.float64)


def ssim(reference, candidate):
    a, b = pixels(reference), pixels(candidate)
    window = min(7, min(a.shape) // 2 * 2 - 1)
    return structural_similarity(a, b, data_range=255, win_size=max(3, window))


def main():
    print(f"{len(photos)} photos, thumbd {thumbd}")
    results = {}
    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix="thumbd-avif-ref-") as ref_folder:
            ref = Path(ref_folder)
            base_cpu, ref_files = render(kind, {"format": "png", "pngCompressionLevel": 0}, ref)

            def score(encoding):
                with tempfile.TemporaryDirectory(prefix="thumbd-avif-run-") as folder:
                    cpu, files = render(kind, encoding, Path(folder))
                    total = sum(p.stat().st_size for p in files.values())
                    quality = np.mean([ssim(ref_files[s], files[s]) for s in files])
                return {"ms": max(0.0, cpu - base_cpu) / len(photos) * 1000, "bytes": total / len(photos), "ssim": quality}

            jpeg = score({"format": "jpeg", "jpegQuality": 85})
            sweep = {q: score({"format": "avif", "avifQuality": q, "avifSpeed": 6}) for q in qualities}
            equal = next((q for q in qualities if sweep[q]["ssim"] >= jpeg["ssim"]), qualities[-1])
            by_speed = {s: (sweep[equal] if s == 6 else score({"format": "avif", "avifQuality": equal, "avifSpeed": s}))
                        for s in speeds}
        results[kind] = {"jpeg": jpeg, "sweep": sweep, "equal": equal, "speeds": by_speed}
        print(f"\n{kind}: JPEG q85 {jpeg['bytes']:.0f} B, SSIM {jpeg['ssim']:.4f}, encode {jpeg['ms']:.1f} ms")
        for q, r in sweep.items():
            print(f"  AVIF q{q} speed 6: {r['bytes']:.0f} B ({r['bytes'] / jpeg['bytes'] * 100:.0f}%), SSIM {r['ssim']:.4f}, encode {r['ms']:.1f} ms")
        for s, r in by_speed.items():
            ratio = r["ms"] / max(jpeg["ms"], 0.01)
            print(f"  AVIF q{equal} speed {s}: {r['bytes']:.0f} B ({r['bytes'] / jpeg['bytes'] * 100:.0f}%), SSIM {r['ssim']:.4f}, "
                  f"encode {r['ms']:.1f} ms = {ratio:.1f}x JPEG{' (over 5x)' if ratio > 5 else ''}")
    (Path(tempfile.gettempdir()) / "thumbd-avif-quality.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
