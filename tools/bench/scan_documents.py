"""Multi-page scanned documents: pages of the generated scan set bound into documents of 3-5 pages.

    python -m tools.bench.scan_documents --out /tmp/scandocs
    hsd bench /tmp/scandocs --target simulated-gpu --gpu-pass-ms 5 --tokenizer qwen --methods ar,hsd

writes ``OUT/pairs/KIND_doc.pdf``, an image-only PDF of the first pages of one kind of
``tools.bench.scan_set`` (the same seed gives the same pages: ``KIND_000``, ``KIND_001``, ...),
each page scanned as that set scans it but the whole document at one resolution (its first page's),
as a scanner feeds a document; its reference Markdown beside it, the pages' references in order.
The documents are ones people convert several pages of at once: articles of one, two and three
columns, a report, a paper with formulas, a gazette, a slide deck, a Chinese text.
``hsd bench`` on it measures what a document's end to end costs against its passes, drafting of
the next pages included (``core.bench.report.document_end_to_end``).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from core.commands.arguments import whole_number
from tools.bench import scan_set

#: (kind, pages) of each document, in the order they are written.
DOCUMENTS = (("article1", 4), ("article2", 3), ("article3", 3), ("report", 4), ("formula", 3),
             ("gazette", 3), ("slide", 5), ("chinese", 3))


def document_name(kind: str) -> str:
    return f"{kind}_doc"  # the kind is the name up to "_", as in the scan set


def make_document(kind: str, pages: int, seed: int = scan_set.DEFAULT_SEED) -> tuple[bytes, str]:
    """(image-only PDF, reference Markdown) of the first ``pages`` pages of ``kind`` under ``seed``."""
    import pymupdf

    references, dpi = [], None
    with pymupdf.open() as out:
        for index in range(pages):
            born, scan, layout, reference = scan_set.make_page(kind, index, seed)
            dpi = dpi or layout["scan"]["dpi"]
            if layout["scan"]["dpi"] != dpi:  # one resolution a document: scanned again at the first page's
                scan = scan_set.scanned(born, dict(layout["scan"], dpi=dpi))
            with pymupdf.open("pdf", scan) as page:
                out.insert_pdf(page)
            references.append(reference.strip())
        return out.tobytes(garbage=3, deflate=True, no_new_id=True), "\n\n".join(references) + "\n"


def make_scan_documents(out: Path, seed: int = scan_set.DEFAULT_SEED, documents=DOCUMENTS, log=None) -> list[str]:
    """Write the documents (module docstring) into ``out``; returns their names."""
    pairs = Path(out) / "pairs"
    pairs.mkdir(parents=True, exist_ok=True)
    names = []
    for kind, pages in documents:
        pdf, reference = make_document(kind, pages, seed)
        name = document_name(kind)
        (pairs / f"{name}.pdf").write_bytes(pdf)
        (pairs / f"{name}.md").write_text(reference, encoding="utf-8")
        names.append(name)
        if log:
            log(f"{name}: {pages} pages")
    total = sum(pages for _, pages in documents)
    (Path(out) / "README.md").write_text(
        f"# Multi-page scanned documents (seed {seed})\n\nMade by `python -m tools.bench.scan_documents --seed "
        f"{seed}`: {len(names)} documents, {total} scanned pages of the generated scan set, each document at one "
        "resolution, its reference Markdown beside it. Run `hsd bench` on this folder.\n", encoding="utf-8")
    return names


def parse_documents(spec: str) -> tuple[tuple[str, int], ...]:
    """``"article1:4,slide:5"`` -> ``(("article1", 4), ("slide", 5))``; ``ValueError`` naming what is wrong."""
    documents = []
    for piece in (p.strip() for p in spec.split(",") if p.strip()):
        kind, _, pages = piece.partition(":")
        if kind not in scan_set.KINDS:
            raise ValueError(f"unknown kind {kind!r}; known: {', '.join(scan_set.KINDS)}")
        if not pages.isdigit() or not 1 <= int(pages) <= 100:
            raise ValueError(f"{piece!r}: expected KIND:PAGES with PAGES from 1 to 100")
        documents.append((kind, int(pages)))
    if len({kind for kind, _ in documents}) != len(documents):
        raise ValueError("one document a kind: a kind is named twice")
    if not documents:
        raise ValueError("no document named")
    return tuple(documents)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.scan_documents",
        description="write multi-page scanned documents made of the generated scan set's pages, each with its "
        "reference Markdown (OUT/pairs), from a seed")
    parser.add_argument("--out", required=True, help="corpus folder to write (pairs/ is created in it)")
    parser.add_argument("--seed", type=whole_number(0, 2**31 - 1, "--seed"), default=scan_set.DEFAULT_SEED,
                        help=f"the scan set's seed (default {scan_set.DEFAULT_SEED})")
    parser.add_argument("--documents", default=",".join(f"{k}:{n}" for k, n in DOCUMENTS),
                        help="comma-separated KIND:PAGES, one document a kind (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.getLogger("fontTools").setLevel(logging.ERROR)  # its notes on the fonts' header dates, per page
    try:
        documents = parse_documents(args.documents)
    except ValueError as exc:
        parser.error(str(exc))
    out = Path(args.out)
    if (out / "pairs").is_dir() and any((out / "pairs").iterdir()):  # nothing written over
        parser.error(f"{out / 'pairs'} already holds files; choose an empty --out")
    names = make_scan_documents(out, args.seed, documents, log=print)
    print(f"wrote {len(names)} documents, {sum(n for _, n in documents)} pages, to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
