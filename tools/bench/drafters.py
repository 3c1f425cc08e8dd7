"""Drafter benchmark: speed and whole-document text edit distance on the corpus pairs.

    python -m tools.bench.drafters [CORPUS] [--drafters textlayer,rapidocr,auto] [--out docs/drafters.md]

For each ``CORPUS/pairs/*.pdf`` with a reference ``.md`` beside it, every drafter drafts every page;
the drafts of a document are concatenated in reading order (page headers, footers, page numbers and
text inside figures left out, as the references leave them out) and compared with the reference using the corpus README's
normalisation (``text_edit_distance``). Reported per document group: mean distance and ms/page.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

from core.documents import open_document
from core.drafters import get_drafter
from core.text_distance import text_edit_distance

#: Drafters measured here for comparison only, not offered to conversions (docs/drafters.md says why).
COMPARED_ONLY = {"pymupdf-layout": ("core.drafters.pymupdf_layout", "PyMuPDFLayoutDrafter")}


def _drafter(name: str):
    if name in COMPARED_ONLY:
        import importlib

        module, cls = COMPARED_ONLY[name]
        return getattr(importlib.import_module(module), cls)()
    return get_drafter(name)


SKIPPED_LABELS = {"header", "footer", "page_number", "figure"}
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
CJK_GROUPS = ("chinese",)


def document_group(stem: str) -> str:
    """docling_* / mineru_* by prefix; odb_* split by language (the file names say it)."""
    prefix = stem.split("_", 1)[0]
    if prefix == "odb":
        return "odb_chinese" if "chinese" in stem else "odb_english"
    return prefix


#: (drafter that ran, file, page index) -> (regions, seconds). ``auto`` hands each page to
#: ``textlayer`` or ``rapidocr``; their results are the same as when those run alone, so a page is
#: drafted once per underlying drafter (OCR is the slow part) and its measured time reused.
_PAGE_CACHE: dict = {}


def draft_page(drafter, pdf: Path, page) -> tuple[list, float]:
    """(regions, seconds), the seconds including auto's per-page choice."""
    start = time.perf_counter()
    used = drafter.choose(page) if hasattr(drafter, "choose") else drafter
    choosing = time.perf_counter() - start
    key = (used.name, str(pdf), page.index)
    if key not in _PAGE_CACHE:
        start = time.perf_counter()
        regions = used.draft(page)
        _PAGE_CACHE[key] = (regions, time.perf_counter() - start)
    regions, seconds = _PAGE_CACHE[key]
    return regions, seconds + choosing


def draft_document(drafter, pdf: Path) -> tuple[str, int, float]:
    """(concatenated draft text, pages, seconds drafting)."""
    parts, seconds = [], 0.0
    with open_document(pdf) as doc:
        for page in doc.pages():
            regions, page_seconds = draft_page(drafter, pdf, page)
            seconds += page_seconds
            parts += [r.text for r in regions if r.label not in SKIPPED_LABELS]
        return "\n\n".join(parts), doc.page_count, seconds


def run(corpus: Path, drafter_names: list[str], verbose: bool = True, only: dict | None = None) -> dict:
    """{drafter: {group: {"docs": [(stem, distance)], "pages": n, "seconds": s}}}

    ``only``: {drafter: set of groups} to restrict a drafter to some groups (others: all)."""
    pairs = sorted(p for p in (corpus / "pairs").glob("*.pdf") if p.with_suffix(".md").exists())
    results: dict = {}
    for name in drafter_names:
        drafter = _drafter(name)
        groups: dict = defaultdict(lambda: {"docs": [], "pages": 0, "seconds": 0.0})
        for pdf in pairs:
            if only and name in only and document_group(pdf.stem) not in only[name]:
                continue
            text, pages, seconds = draft_document(drafter, pdf)
            distance = text_edit_distance(text, pdf.with_suffix(".md").read_text(encoding="utf-8"))
            group = groups[document_group(pdf.stem)]
            group["docs"].append((pdf.stem, distance))
            group["pages"] += pages
            group["seconds"] += seconds
            if verbose:
                print(f"{name:10s} {pdf.stem[:48]:48s} {distance:.3f} {1000 * seconds / pages:8.1f} ms/page",
                      file=sys.stderr)
        results[name] = dict(groups)
    return results


NOTES = """# Drafters: quality and speed on the development corpus

Groups: `docling` (10 born-digital documents, 36 pages), `mineru` (4 documents, 21 pages, one of
them a page whose text layer is mojibake), `odb_english` / `odb_chinese` (6 + 6 scanned single
pages of OmniDocBench, image-only PDFs). Targets: textlayer <= 0.05 on docling and
<= 0.35 on mineru; rapidocr <= 0.25 on odb_english.

What the numbers do not show: the references write formulas as LaTeX (`\\frac`, `\\mathrm`, ...),
which no drafter produces, so formula-heavy pages (odb_03, odb_09, the mineru papers) keep a floor
of distance; floats (figure captions, tables) sit where each reference put them. Times were taken on
a 2-core machine shared with other jobs, so they are pessimistic; OCR time is dominated by the
PP-OCRv6 recogniser, and textlayer time by `find_tables` on pages that have ruling lines (pages
without rules take a few ms).

"""


def markdown_table(results: dict) -> str:
    groups = sorted({g for r in results.values() for g in r})
    lines = ["| drafter | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
    for name, by_group in results.items():
        cells = []
        for g in groups:
            data = by_group.get(g)
            if not data:
                cells.append("-")
                continue
            mean = sum(d for _, d in data["docs"]) / len(data["docs"])
            cells.append(f"{mean:.3f} ({1000 * data['seconds'] / data['pages']:.0f} ms/p)")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_document_table(results: dict) -> str:
    names = list(results)
    stems = sorted({s for r in results.values() for g in r.values() for s, _ in g["docs"]})
    dist = {(n, s): d for n in names for g in results[n].values() for s, d in g["docs"]}
    lines = ["| document | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for s in stems:
        lines.append(f"| {s} | " + " | ".join(f"{dist[(n, s)]:.3f}" if (n, s) in dist else "-" for n in names) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.drafters", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=os.environ.get("HSD_CORPUS", str(DEFAULT_CORPUS)))
    parser.add_argument("--drafters", default="textlayer,rapidocr,auto")
    parser.add_argument("--only", action="append", default=[], metavar="DRAFTER=GROUP,GROUP",
                        help="run DRAFTER on these groups only, e.g. rapidocr=odb_english,odb_chinese")
    parser.add_argument("--out", default=None, help="write the Markdown report here (e.g. docs/drafters.md)")
    args = parser.parse_args(argv)
    only = {}
    for spec in args.only:
        name, _, groups = spec.partition("=")
        only[name] = set(groups.split(","))
    corpus = Path(args.corpus).resolve()
    if not (corpus / "pairs").is_dir():
        print(f"no corpus at {corpus} (expected a pairs/ folder)", file=sys.stderr)
        return 2
    results = run(corpus, args.drafters.split(","), only=only)
    report = NOTES + (
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()} "
        f"({os.cpu_count()} CPUs, shared), `python -m tools.bench.drafters {' '.join(argv if argv is not None else sys.argv[1:])}`.\n\n"
        "Cells: mean whole-document text edit distance (lower is better; corpus README normalisation; "
        "headers, footers, page numbers and figure text left out) and drafting time per page.\n\n"
        + markdown_table(results) + "\n\nPer document:\n\n" + per_document_table(results) + "\n"
    )
    print(report)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
