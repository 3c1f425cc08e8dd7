"""How a scan's direction is decided, how often right, and what it costs beside OCR.

    python -m tools.bench.turn_check FOLDER [FOLDER ...] [--expect name] [--ocr] [--pages N]
    python -m tools.bench.turn_check FOLDER [FOLDER ...] --ink-turned

reads every scanned page (no usable text layer: ``Page.is_born_digital`` false) of every PDF or
image in the folders (or their ``pairs/``), decides its turn as ``--rotate auto`` does
(``orientation.scan_reading``) and prints one line per page: the turn, what decided it (``ink``:
the ink alone; ``ocr``: OCR's reading), and its time. ``--expect name`` takes the right turn from
the turned set's names (``tools.bench.turned_set``: ``page90_001`` is turned 90), else every page is
upright. ``--ocr`` also times the OCR drafter on the page as drawn and reports the check's time as a
fraction of it (median and 90th percentile). Both times are taken in one process, one after the
other, so a busy machine slows both alike.

``--ink-turned`` reads each scanned page's ink only, as drawn and turned 90, 180 and 270 degrees
(its render turned), and counts the turned pages the ink alone would call upright (the only answer
it gives without OCR): the cost of a missed turn, on every kind of page the folders hold.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

SUFFIXES = (".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


def expected_turn(name: str, expect: str) -> int:
    """The turn a page should get: from the turned set's class name (``expect == "name"``), else 0."""
    if expect == "name":
        found = re.match(r"[a-z]+?(90|180|270)_", name)
        return int(found.group(1)) if found else 0
    return 0


def documents(folders: list[str]) -> list[Path]:
    files = []
    for folder in map(Path, folders):
        base = folder / "pairs" if (folder / "pairs").is_dir() else folder
        files += sorted(p for p in base.iterdir() if p.suffix.lower() in SUFFIXES)
    return files


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="decide every scan's turn; say how and at what cost")
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--expect", choices=("upright", "name"), default="upright")
    parser.add_argument("--ocr", action="store_true", help="also time the OCR drafter on each page")
    parser.add_argument("--pages", type=int, default=0, help="at most this many pages per document")
    parser.add_argument("--ink-turned", action="store_true",
                        help="the ink alone on each page as drawn and turned 90, 180, 270")
    args = parser.parse_args(argv)
    if args.ink_turned:
        return ink_turned(args.folders, args.pages)

    from core.documents import open_document
    from core.drafters.orientation import scan_reading

    ocr = None
    if args.ocr:
        from core.drafters.rapidocr import RapidOCRDrafter
        ocr = RapidOCRDrafter()
    rows, fractions = [], []
    for path in documents(args.folders):
        with open_document(path, rotate="off") as doc:
            for page in doc.pages():
                if args.pages and page.index >= args.pages:
                    break
                if page.is_born_digital:
                    continue
                start = time.perf_counter()
                turn, how = scan_reading(page)
                check = time.perf_counter() - start
                line = f"{path.parent.parent.name}/{path.stem} p{page.index + 1}"
                want = expected_turn(path.stem, args.expect)
                note = "" if turn == want else f"  WRONG (want {want})"
                if ocr is not None:
                    start = time.perf_counter()
                    ocr.draft(page)
                    spent = time.perf_counter() - start
                    fractions.append(check / spent)
                    note = f"  ocr {spent:.2f}s  check/ocr {check / spent:.3f}" + note
                print(f"{line:60s} turn={turn:3d} by={how:4s} {check:.2f}s{note}", flush=True)
                rows.append((turn == want, how, check))
    if not rows:
        print("no scanned page found")
        return 1
    right = sum(ok for ok, _, _ in rows)
    by_ink = sum(how == "ink" for _, how, _ in rows)
    print(f"{len(rows)} scanned pages: {right} decided right, {len(rows) - right} wrong; "
          f"{by_ink} by the ink alone; check median {statistics.median(r[2] for r in rows):.2f}s")
    if fractions:
        print(f"check / OCR drafting time per page: median {statistics.median(fractions):.3f}, "
              f"p90 {percentile(fractions, 0.9):.3f}")
    return 0 if right == len(rows) else 2


def ink_turned(folders: list[str], pages: int = 0) -> int:
    """``--ink-turned``: one line per page (the ink's reading at each turn), then the counts."""
    import numpy as np

    from core import tuning
    from core.documents import open_document
    from core.drafters.ink_turn import ink_profile
    from core.drafters.orientation import ink_says_upright

    upright_kept = upright_total = missed = turned_total = 0
    for path in documents(folders):
        with open_document(path, rotate="off") as doc:
            for page in doc.pages():
                if pages and page.index >= pages:
                    break
                if page.is_born_digital:
                    continue
                gray = np.asarray(page.render(dpi=tuning.INK_TURN_DPI).convert("L"))
                cells = []
                for turn in (0, 90, 180, 270):
                    # the page as a scanner fed it turned: its render turned the other way
                    reading = ink_profile(np.ascontiguousarray(np.rot90(gray, k=turn // 90)))
                    says = ink_says_upright(reading)
                    if turn == 0:
                        upright_total += 1
                        upright_kept += says
                    else:
                        turned_total += 1
                        missed += says
                    cells.append(f"{turn}:{reading.across:.2f}/{reading.ascent:+.2f}/{reading.lines}"
                                 f"{'=up' if says else ''}")
                print(f"{path.parent.parent.name}/{path.stem} p{page.index + 1}  " + "  ".join(cells), flush=True)
    print(f"{upright_total} scanned pages: {upright_kept} upright as drawn called upright by the ink alone "
          f"(no OCR); {missed} of {turned_total} turned copies wrongly called upright")
    return 0 if not missed else 2


if __name__ == "__main__":
    raise SystemExit(main())
