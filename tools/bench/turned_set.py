"""Generated turned pages, each beside the same page upright: sideways slides and sideways scans.

    python -m tools.bench.turned_set --out turnedset      # seed 29, 27 pages, turned 90, 180, 270

writes, for every page, four PDFs with the same reference Markdown (the generator's own):

* ``turnedset/born/pairs/CLASS_NNN.pdf``: the page born-digital and upright (``tools.bench.scan_set``'s
  typesetting): the twin the turned pages are measured against;
* ``turnedset/turned/pairs/CLASS_NNN.pdf``: the same page drawn turned inside a page of its own
  (a landscape slide printed sideways on a portrait sheet, or upside down), text layer kept;
* ``turnedset/scan/pairs/CLASS_NNN.pdf``: the upright page scanned (``scan_set.scanned``);
* ``turnedset/turnedscan/pairs/CLASS_NNN.pdf``: the turned page scanned with the same scanner
  settings (a scan fed in sideways or upside down).

``CLASS`` is ``slide90``, ``slide180``, ``slide270`` (the scan set's 16:9 slides) and ``page90``,
``page180``, ``page270`` (its one-column articles and reports), so ``hsd bench`` reports each
rotation as a kind. Rotations go round the pages in turn. Everything follows from the seed;
nothing is downloaded.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pymupdf

from tools.bench import scan_set

ROTATIONS = (90, 180, 270)
#: (class stem, the scan set's kinds its pages come from)
SOURCES = (("slide", ("slide",)), ("page", ("article1", "report")))
DEFAULT_PAGES = 27
HALVES = ("born", "turned", "scan", "turnedscan")


def turned_pdf(pdf: bytes, rotate: int) -> bytes:
    """``pdf``'s first page drawn turned by ``rotate`` degrees on a page of the turned size."""
    with pymupdf.open("pdf", pdf) as src, pymupdf.open() as out:
        rect = src[0].rect
        width, height = (rect.height, rect.width) if rotate in (90, 270) else (rect.width, rect.height)
        page = out.new_page(width=width, height=height)
        page.show_pdf_page(page.rect, src, 0, rotate=rotate)
        return out.tobytes(garbage=3, deflate=True, no_new_id=True)


def make_page(index: int, seed: int = scan_set.DEFAULT_SEED) -> tuple[str, dict[str, bytes], str]:
    """(name, {half: PDF}, reference) of page ``index``: sources and rotations go round in turn."""
    stem, kinds = SOURCES[index % 2]
    rotate = ROTATIONS[(index // 2) % 3]
    kind = kinds[(index // 6) % len(kinds)]
    born, _, layout, reference = scan_set.make_page(kind, 1000 + index, seed)
    params = layout["scan"]
    turned = turned_pdf(born, rotate)
    name = f"{stem}{rotate}_{index:03d}"
    return name, {"born": born, "turned": turned, "scan": scan_set.scanned(born, params),
                  "turnedscan": scan_set.scanned(turned, params)}, reference


def make_turned_set(out: Path, seed: int = scan_set.DEFAULT_SEED, pages: int = DEFAULT_PAGES, log=None) -> list[str]:
    """Write the set into ``out`` (module docstring); returns the page names written."""
    out = Path(out)
    for half in HALVES:
        (out / half / "pairs").mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(pages):
        name, pdfs, reference = make_page(i, seed)
        for half, pdf in pdfs.items():
            (out / half / "pairs" / f"{name}.pdf").write_bytes(pdf)
            (out / half / "pairs" / f"{name}.md").write_text(reference, encoding="utf-8")
        names.append(name)
        if log:
            log(name)
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write generated turned pages beside their upright twins")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=scan_set.DEFAULT_SEED)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    args = parser.parse_args(argv)
    names = make_turned_set(Path(args.out), args.seed, args.pages)
    print(f"wrote {len(names)} pages, each in {', '.join(HALVES)}, to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
