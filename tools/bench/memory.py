"""Memory benchmark: peak RSS against page count while ``hsd convert`` works through a long PDF.

    python -m tools.bench.memory [--pages 500] [--model DIR] [--mode ar] [--dpi 144] [--out mem.json]

Pages must stream: each is rendered, drafted, decoded, saved and dropped before the next, so memory
stays flat however long the document. The benchmark writes an N-page PDF (a heading, a paragraph
and a full-width raster figure per page, so that every render weighs a few megabytes: 500 pages
held at once would need over a gigabyte), converts it through the CLI's own code path with a tiny
model (built on the fly unless ``--model`` is given; few tokens per page, as decoding is not what is
measured), and samples the process's resident memory after every saved page.

Reported: RSS and peak RSS at checkpoints, and the growth from the first checkpoint after warm-up
to the end. Not a test: numbers depend on the machine (``tests/reliability/test_memory.py`` checks
the streaming itself).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def make_long_pdf(path: Path, pages: int) -> Path:
    """``pages`` A5-ish pages, each with text and the same embedded 800x500 raster figure."""
    import io

    import pymupdf
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (800, 500), "white")
    draw = ImageDraw.Draw(picture)
    for k in range(0, 800, 20):
        draw.line((k, 0, 800 - k, 500), fill=(k % 255, 90, 200 - k % 200), width=3)
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    doc = pymupdf.open()
    xref = 0
    for n in range(pages):
        page = doc.new_page(width=420, height=595)
        page.insert_text((36, 50), f"Chapter {n + 1}: streaming pages", fontsize=15)
        page.insert_textbox(pymupdf.Rect(36, 64, 384, 160),
                            "Speculative decoding verifies drafted tokens in parallel, page after page. " * 3,
                            fontsize=9)
        xref = page.insert_image(pymupdf.Rect(36, 180, 384, 400), stream=buf.getvalue() if not xref else None,
                                 xref=xref)
    doc.save(str(path), garbage=0, deflate=True)
    doc.close()
    return path


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run(pages: int, model: str | None, mode: str, dpi: int, max_new_tokens: int, work: Path) -> dict:
    from core.cli import main
    from core.export import DocumentOutput

    if model is None:
        from core.targets.tiny import build_tiny_model

        model = str(build_tiny_model(work / "tiny-model", "qwen2_5_vl", seed=0))
    pdf = make_long_pdf(work / "long.pdf", pages)
    samples: list[dict] = []
    original = DocumentOutput.save_page
    t0 = time.perf_counter()

    def save_page(self, result, page_image=None):
        original(self, result, page_image)
        samples.append({"page": len(samples) + 1, "rss_mb": round(_rss_mb(), 1), "peak_mb": round(_peak_mb(), 1),
                        "seconds": round(time.perf_counter() - t0, 2)})
        if len(samples) % 50 == 0:
            print(f"memory: {samples[-1]}", file=sys.stderr, flush=True)

    DocumentOutput.save_page = save_page
    try:
        start_rss = _rss_mb()
        rc = main(["convert", str(pdf), "-o", str(work / "long.md"), "--model", model, "--mode", mode,
                   "--drafter", "textlayer", "--dpi", str(dpi), "--max-new-tokens", str(max_new_tokens),
                   "--device", "cpu", "-q", "--fresh"])
    finally:
        DocumentOutput.save_page = original
    if rc != 0:
        raise SystemExit(f"conversion failed with exit code {rc}")
    warm = samples[min(len(samples) - 1, max(9, len(samples) // 50))]
    last = samples[-1]
    checkpoints = sorted({1, 10, 50, 100, 200, 300, 400, 500, pages} & set(range(1, pages + 1)))
    return {
        "pages": pages, "mode": mode, "dpi": dpi, "max_new_tokens": max_new_tokens,
        "render_mb_per_page": round(420 * dpi / 72 * 595 * dpi / 72 * 3 / 2**20, 2),
        "rss_before_mb": round(start_rss, 1),
        "checkpoints": [samples[p - 1] for p in checkpoints],
        "growth_after_warmup_mb": round(last["rss_mb"] - warm["rss_mb"], 1),
        "warmup_page": warm["page"],
        "peak_mb": last["peak_mb"],
        "seconds": last["seconds"],
    }


def report(result: dict) -> str:
    lines = [f"{result['pages']} pages, mode {result['mode']}, {result['dpi']} dpi "
             f"({result['render_mb_per_page']} MB per rendered page), {result['max_new_tokens']} tokens/page",
             "", "| pages done | RSS (MB) | peak RSS (MB) | seconds |", "|---:|---:|---:|---:|"]
    for s in result["checkpoints"]:
        lines.append(f"| {s['page']} | {s['rss_mb']} | {s['peak_mb']} | {s['seconds']} |")
    lines += ["", f"RSS growth from page {result['warmup_page']} to page {result['pages']}: "
                  f"{result['growth_after_warmup_mb']} MB; peak {result['peak_mb']} MB."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--model", default=None, help="model folder (default: a tiny qwen2_5_vl built here)")
    parser.add_argument("--mode", default="ar", choices=["ar", "hsd", "page", "regions"])
    parser.add_argument("--dpi", type=int, default=144)
    parser.add_argument("--max-new-tokens", type=int, default=4)
    parser.add_argument("--out", default=None, metavar="FILE.json", help="also write the numbers here")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="hsd-memory-") as tmp:
        result = run(args.pages, args.model, args.mode, args.dpi, args.max_new_tokens, Path(tmp))
    print(report(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
