"""Lines the recogniser reads on scan pages whose decode ends while the OCR reads them.

    python -m tools.bench.stop_lines PDF [--json OUT.json] [--workers N]

Drafts every page of ``PDF`` (a document of ``tools.bench.scan_documents``) three times over, each
with its own RapidOCR drafter, the first page read whole (it learns the document's script) and the
others as one of: ``whole`` (no stop), ``layout`` (the decode ended before drafting began:
``draft_layout``), ``stopped`` (the decode ends once the first lines are told:
``core.drafters.line_stream.PageReads``' stop after its first chunk). Per page and mode it counts the
lines recognised (each crop handed to the recogniser), those recognised more than once at the
same width, those recognised but not kept (read ahead of a stop and wanted by nothing), and the
drafting's CPU seconds (``time.process_time``, every thread) and wall seconds. A
page counts as a figure page where its whole read has a figure. ``--json`` writes the counts and
each page's drafts (label, box, text of every region), so two trees can be checked for the same
drafts. The counts hardly depend on the machine's load (only how far the recogniser's threads
ran ahead of a stop); the seconds do.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

MODES = ("whole", "layout", "stopped")


class CountingRecogniser:
    """The pipeline's recogniser, counting the crops it reads (by their pixels and width)."""

    def __init__(self, inner):
        self.inner = inner
        self.seen: Counter = Counter()

    def read(self, crops):
        for crop in crops:
            self.seen[(crop.shape, hash(crop.tobytes()))] += 1
        return self.inner.read(crops)

    def read_batches(self, crops, batch, run=map):
        return self.inner.read_batches(crops, batch, run)

    def take(self) -> Counter:
        seen, self.seen = self.seen, Counter()
        return seen


def draft_document(pdf: Path, mode: str, workers: int | None) -> list[dict]:
    from core.documents import open_document
    from core.drafters.rapidocr import RapidOCRDrafter

    drafter = RapidOCRDrafter(workers=workers)
    pipeline = drafter._ocr_engine()
    counter = pipeline._recogniser = CountingRecogniser(pipeline._recogniser)
    pages = []
    with open_document(pdf) as document:
        for index in range(document.page_count):
            page = document.page(index)
            told: list = []
            pipeline._reads = None
            cpu0, wall0 = time.process_time(), time.perf_counter()
            regions = draft_as(drafter, page, index, mode, told)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            seen = counter.take()
            reads = pipeline._reads
            kept = sum(text is not None for text in reads.texts) if reads is not None else 0
            pages.append({"page": index + 1, "recognised": sum(seen.values()),
                          "twice": sum(n - 1 for n in seen.values()),
                          "not_kept": max(0, len(seen) - kept), "told": sum(len(t) for t in told),
                          "cpu_seconds": round(cpu, 3), "wall_seconds": round(wall, 3),
                          "figure": any(r.label == "figure" for r in regions),
                          "regions": [[r.label, [round(v, 3) for v in r.bbox], r.text] for r in regions]})
    return pages


def draft_as(drafter, page, index: int, mode: str, told: list) -> list:
    """``page`` drafted as ``mode`` says: "whole" (and a document's first page, which learns its
    script) read to its end, "layout..." its layout only (``draft_layout``), else stopped once its
    first lines are told (``told`` collects them)."""
    if index == 0 or mode == "whole":
        return drafter.draft(page)
    if mode.startswith("layout"):
        return drafter.draft_layout(page)
    drafter.stop_when(lambda: bool(told))
    try:
        return drafter.draft(page, on_lines=told.append)
    finally:
        drafter.stop_when(None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    if not args.pdf.is_file():
        print(f"{args.pdf}: no such file")
        return 2
    runs = {mode: draft_document(args.pdf, mode, args.workers) for mode in MODES}
    figures = [p["page"] for p in runs["whole"] if p["figure"]]
    print(f"figure pages (by the whole read): {figures}")
    for mode in MODES:
        on = [p for p in runs[mode] if p["page"] in figures]
        print(f"{mode:8s} figure pages: recognised {sum(p['recognised'] for p in on)}, "
              f"twice {sum(p['twice'] for p in on)}, not kept {sum(p['not_kept'] for p in on)}; per page "
              + ", ".join(f"{p['page']}: {p['recognised']}" for p in on)
              + f"; other pages {sum(p['recognised'] for p in runs[mode] if p['page'] not in figures)}"
              + f"; figure pages' CPU {sum(p['cpu_seconds'] for p in on):.1f} s, wall {sum(p['wall_seconds'] for p in on):.1f} s")
    if args.json:
        args.json.write_text(json.dumps(runs, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
