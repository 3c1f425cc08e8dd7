"""Memory of the app over many documents: the window's resident memory after each of N documents
converted one after another, each kept in the document list as a user keeps them.

    python tools/app_memory.py [--documents 10] [--pages 3] [--model DIR] [--json out.json] [--limit 0.15]

The window runs offscreen with a tiny model (built on the fly unless ``--model`` is given; a few
tokens per page: decoding is not what is measured). Each document is a generated PDF of a heading,
a paragraph and a raster figure per page (so renders weigh a few megabytes), dropped on the window
and converted with the default settings otherwise; the window follows the pages as they convert.
After each document the process collects its garbage and the resident size is read.

Reported: RSS after each document, the growth per document after the first, and the last
document's RSS against the first's. With ``--limit`` the exit status is 1 when the last exceeds
the first by more than that share. Not a unit test: numbers depend on the machine
(``tests/app/test_user_look.py`` runs it with generous margins).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    """The process's resident set size in MiB (Linux ``/proc``; elsewhere the peak, which only grows)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def settle(app) -> float:
    """Let queued deletions and events run, collect garbage, then read the RSS."""
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(3):
        app.processEvents()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        gc.collect()
    return rss_mb()


def make_document(path: Path, pages: int, seed: int) -> Path:
    """A PDF of ``pages`` pages, each a heading, a paragraph and its own page-wide raster picture (a
    scan's weight: MuPDF decodes and caches every picture it renders)."""
    import io
    import random

    import pymupdf
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    doc = pymupdf.open()
    for n in range(pages):
        picture = Image.new("RGB", (1200, 900), (rng.randrange(200, 256),) * 3)
        draw = ImageDraw.Draw(picture)
        for _ in range(300):
            x, y = rng.randrange(1200), rng.randrange(900)
            draw.rectangle((x, y, x + rng.randrange(4, 60), y + rng.randrange(2, 12)),
                           fill=tuple(rng.randrange(256) for _ in range(3)))
        buf = io.BytesIO()
        picture.save(buf, format="PNG")
        page = doc.new_page(width=420, height=595)
        page.insert_text((36, 50), f"Chapter {n + 1} of document {seed}", fontsize=15)
        page.insert_textbox(pymupdf.Rect(36, 64, 384, 160),
                            "Speculative decoding verifies drafted tokens in parallel, page after page. " * 3,
                            fontsize=9)
        page.insert_image(pymupdf.Rect(36, 180, 384, 440), stream=buf.getvalue())
    doc.save(str(path), garbage=0, deflate=True)
    doc.close()
    return path


def run(documents: int, pages: int, model: str | None, work: Path, max_new_tokens: int = 16) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    if model is None:
        from core.targets.tiny import build_tiny_model

        model = str(build_tiny_model(work / "tiny-model", "qwen2_5_vl", seed=0))
    from app.main_window import MainWindow
    from app.settings import AppSettings, ConversionSettings

    settings = AppSettings(QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat))
    settings.set_conversion(ConversionSettings(model=model, device="cpu", drafter="textlayer", mode="hsd",
                                               pages="", max_new_tokens=max_new_tokens))
    settings.set_cache_dir(work / "cache")
    window = MainWindow(settings)
    window.resize(1280, 800)
    window.show()
    start = settle(app)
    samples, statuses = [], []
    for n in range(documents):
        pdf = make_document(work / f"document-{n + 1:02d}.pdf", pages, seed=n + 1)
        loop = QEventLoop()
        ended: list[str] = []

        def finished(status, ended=ended, loop=loop):
            ended.append(status)
            loop.quit()

        window.document_finished.connect(finished)
        window.add_files([str(pdf)])
        if not ended:
            QTimer.singleShot(600_000, loop.quit)  # a run that never ends is reported, not waited on
            loop.exec()
        window.document_finished.disconnect(finished)
        statuses.append(ended[0] if ended else "timed out")
        samples.append(round(settle(app), 1))
        print(f"document {n + 1}: {statuses[-1]}, RSS {samples[-1]:.0f} MiB", flush=True)
    window.confirm_quit = lambda: True
    window.close()
    growth = [round(b - a, 1) for a, b in zip(samples, samples[1:])]
    return {"documents": documents, "pages": pages, "rss_start_mb": round(start, 1), "rss_mb": samples,
            "statuses": statuses, "growth_per_document_mb": growth,
            "median_growth_mb": statistics.median(growth) if growth else 0.0,
            "last_over_first": round(samples[-1] / samples[0], 4) if samples else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--model", help="model folder (default: a tiny random model built here)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--json", help="write the numbers to this file")
    parser.add_argument("--limit", type=float, help="exit 1 if the last RSS exceeds the first by more than this share")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hsd-app-memory-") as tmp:
        report = run(args.documents, args.pages, args.model, Path(tmp), args.max_new_tokens)
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), "utf-8")
    if args.limit is not None and report["last_over_first"] is not None and \
            report["last_over_first"] > 1 + args.limit:
        print(f"RSS grew {report['last_over_first'] - 1:.0%} from the first document to the last "
              f"(limit {args.limit:.0%})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
