"""Exports of a finished document: Markdown with its figures, HTML with typeset formulas (MathML),
DOCX with Word equations, and JSON with regions, acceptance and departures.

Every export is built from the document's pages as ``hsd`` saved them and the user's edits
(``core.exports.source``), never from the input or a model, so exporting needs neither. Names and
the refusals of unsafe targets are ``core.outputs.export_targets`` / ``refuse_unsafe_exports``;
every file is written atomically (``core.export.atomic_write_bytes``).
"""

from __future__ import annotations

import json
from pathlib import Path

from core.export import atomic_write_bytes, atomic_write_text, figure_link, images_dir_for
from core.exports.source import FinishedDocument, open_finished

#: The formats, in the order they are written and offered.
FORMATS = ("md", "html", "docx", "json")
DESCRIPTIONS = {"md": "Markdown with a figures folder", "html": "HTML, formulas as MathML (one file)",
                "docx": "Word, formulas as equations", "json": "JSON: regions, acceptance, departures"}
JSON_FORMAT = "hsd-document/1"

__all__ = ["FORMATS", "DESCRIPTIONS", "FinishedDocument", "open_finished", "parse_formats", "document_payload",
           "export_document", "export_documents"]


def parse_formats(value: str) -> list[str]:
    """``md,html`` -> ``["md", "html"]`` in ``FORMATS`` order; ``ValueError`` naming an unknown one."""
    names = [v.strip().lower() for v in value.split(",") if v.strip()]
    names = ["md" if n == "markdown" else n for n in names]
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise ValueError(f"{', '.join(unknown) or 'nothing'} is not a format; use one or more of {','.join(FORMATS)}")
    return [f for f in FORMATS if f in names]


def _region_record(result, i: int, region) -> dict:
    """A region as ``--stats`` writes it (label, box in points, draft text, source, ``stats``, the
    model's ``output``) and its ``acceptance``: accepted over drafted tokens (None: nothing drafted)."""
    stats = result.region_stats[i] if i < len(result.region_stats) else None
    record = dict(region.to_dict(), index=i,
                  output=result.region_outputs[i] if i < len(result.region_outputs) else "")
    if stats is not None:
        record["stats"] = stats.to_dict()
        record["acceptance"] = (round(stats.accepted_tokens / stats.drafted_tokens, 4) if stats.drafted_tokens
                                else None)
    return record


def _review(result, text: str) -> dict | None:
    try:
        from core.review import review_page
    except ImportError:  # pragma: no cover - the review list ships with core
        return None
    return review_page(result, text).to_dict()


def document_payload(document: FinishedDocument) -> dict:
    """What the JSON export writes: ``--stats``' document (file, output, settings, totals, pages with
    their statistics and regions) where every page also has its Markdown as exported (edits applied),
    ``model_markdown`` and ``edited``, each region its ``acceptance``, and the page its ``review``:
    where the model departs from the page's text (offsets in ``model_markdown``)."""
    from core.stats import document_totals

    results = sorted(document.results, key=lambda r: r.page)
    pages = []
    for result in results:
        model = document.model_text(result)
        text = document.page_text(result)
        page = result.to_dict()
        page.pop("output_tokens", None)
        page.update(markdown=text, model_markdown=model, edited=text != model,
                    regions=[_region_record(result, i, r) for i, r in enumerate(result.regions)])
        review = _review(result, model)
        if review is not None:
            page["review"] = review
        pages.append(page)
    payload = {"format": JSON_FORMAT, "file": document.source, "output": str(document.markdown_path),
               "settings": document.settings, "totals": document_totals(results) if results else {},
               "pages": pages}
    if not results:
        payload["markdown"] = document.markdown()
    return payload


def _markdown_copy(document: FinishedDocument, target: Path) -> None:
    """``target`` (and its figures folder) as the Markdown of ``document``, its figure links renamed
    to the new folder."""
    text = document.markdown()
    source_dir, target_dir = document.images_dir, images_dir_for(target)
    if source_dir.name != target_dir.name and document.results:
        for result in document.results:
            for i in result.figure_links:
                text = text.replace(figure_link(source_dir.name, result.page, i),
                                    figure_link(target_dir.name, result.page, i))
    for result in document.results:
        for i in result.figure_links:
            name = figure_link(source_dir.name, result.page, i).rsplit("/", 1)[1]
            data = (source_dir / name).read_bytes()
            atomic_write_bytes(target_dir / name, data)
    atomic_write_text(target, text)


def export_document(document: FinishedDocument, targets: dict[str, Path]) -> list[Path]:
    """Write each format of ``targets`` (format -> file); returns the files written."""
    written = []
    for fmt in FORMATS:
        target = targets.get(fmt)
        if target is None:
            continue
        target = Path(target)
        if fmt == "md":
            _markdown_copy(document, target)
        elif fmt == "html":
            from core.exports.html import document_html

            atomic_write_text(target, document_html(document.markdown(), document.title,
                                                    document.markdown_path.parent, document.images_dir))
        elif fmt == "docx":
            from core.exports.word import document_docx

            atomic_write_bytes(target, document_docx(document.markdown(), document.title,
                                                     document.markdown_path.parent, document.images_dir))
        else:
            atomic_write_text(target, json.dumps(document_payload(document), indent=1, ensure_ascii=False))
        written.append(target)
    return written


def export_documents(sources, formats, folder: Path | None = None, pattern: str | None = None,
                     overwrite: bool = False, progress=None) -> list[Path]:
    """The batch export: every source (a converted ``NAME.md``) in every format, named by ``pattern``
    in ``folder``; everything is checked before the first file is written (``HSDError``)."""
    from core.outputs import EXPORT_PATTERN, export_targets, refuse_unsafe_exports

    sources = [Path(s) for s in sources]
    documents = [open_finished(s) for s in sources]
    targets = export_targets(sources, formats, folder, pattern or EXPORT_PATTERN)
    refuse_unsafe_exports(sources, targets, overwrite)
    written = []
    for document, per_format in zip(documents, targets):
        written += export_document(document, per_format)
        if progress is not None:
            progress(document, per_format)
    return written
