"""Export: Markdown with an images folder, HTML (formulas as MathML), DOCX (formulas as Word
equations), JSON with regions, acceptance and departures, a batch of documents, the clipboard.

The Markdown goes through ``hsd convert``'s own path (``DocumentOutput.save_page`` then
``write_markdown``), so for the same input and settings the file is byte-identical to the CLI's;
pages the user edited are written as edited. HTML, DOCX and JSON are ``core.exports``' (what
``hsd export`` writes), built from the app's results, their figures in the work folder and the edits.
Every file is written atomically (temporary name, then rename). Nothing is overwritten unless the
caller says so: ``conflicts`` lists what an export would replace, the UI asks, and only then passes
``overwrite=True``.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import shutil
from pathlib import Path

from core.api import FIGURE_LABELS, DocumentOutput, atomic_write_text, figure_filename


class ExportConflict(FileExistsError):
    def __init__(self, paths: list[Path]):
        super().__init__(f"would overwrite {', '.join(str(p) for p in paths)}")
        self.paths = paths


def images_dir_of(markdown_path: Path) -> Path:
    """The figures folder an export writes: the one ``hsd convert`` names (odd names made safe)."""
    from core.api import images_dir_for

    return images_dir_for(markdown_path)


def markdown_conflicts(markdown_path: Path, results) -> list[Path]:
    """Existing files a Markdown export to ``markdown_path`` would replace."""
    markdown_path = Path(markdown_path)
    found = [markdown_path] if markdown_path.exists() else []
    images = images_dir_of(markdown_path)
    for r in results:
        for i, region in enumerate(r.regions):
            if region.label in FIGURE_LABELS and (images / figure_filename(r.page, i)).exists():
                found.append(images / figure_filename(r.page, i))
    return found


def export_markdown(input_path: Path, markdown_path: Path, results, settings: dict, dpi: int,
                    password: str | None = None, overwrite: bool = False, texts: dict | None = None) -> Path:
    """Write ``markdown_path`` and its ``NAME_images/`` folder exactly as ``hsd convert`` would.

    Pages with figure regions are rendered again (at ``dpi``, as the engine did) to crop the figures.
    ``texts``: page -> the user's edited Markdown, written instead of the model's.
    """
    input_path, markdown_path = Path(input_path), Path(markdown_path)
    conflicts = markdown_conflicts(markdown_path, results)
    if conflicts and not overwrite:
        raise ExportConflict(conflicts)
    results = sorted(results, key=lambda r: r.page)
    work_dir = markdown_path.with_name(f".{markdown_path.name}.hsd")
    had_work_dir = work_dir.exists()
    output = DocumentOutput(input_path, markdown_path, settings, resume=False)
    copies = []
    doc = None
    try:
        for result in results:
            r = copy.copy(result)  # save_page sets figure links; the app's results stay as they are
            image = None
            if not r.error and any(reg.label in FIGURE_LABELS for reg in r.regions):
                if doc is None:
                    from core.api import open_document

                    doc = open_document(input_path, password=password, rotate=settings.get("rotate", "off"))
                image = doc.page(r.page - 1).render(dpi)
            output.save_page(r, image)
            copies.append(r)
        path = output.write_markdown(copies, texts)
    finally:
        if doc is not None:
            doc.close()
        if not had_work_dir:  # resume data of this export: not the user's business
            shutil.rmtree(work_dir, ignore_errors=True)
    return path


def finished_document(work_markdown: Path, results, settings: dict, input_path: Path, edits=None):
    """The app's document as the exports read it: its results (figures in the work folder beside
    ``work_markdown``, where the run saved them) and the user's edits."""
    from core.api import FinishedDocument

    return FinishedDocument(Path(work_markdown), sorted(results, key=lambda r: r.page), edits, dict(settings),
                            str(input_path))


def export_as(document, fmt: str, path: Path, overwrite: bool = False) -> Path:
    """Write ``document`` (``finished_document``) as ``fmt`` (html, docx, json) to ``path``."""
    from core.api import check_output_target, export_document

    path = Path(path)
    check_output_target(path, "the export")
    if os.path.lexists(path) and not overwrite:
        raise ExportConflict([path])
    return export_document(document, {fmt: path})[0]


def batch_targets(markdown_paths, formats, folder: Path, pattern: str) -> list[dict]:
    """Per document, format -> file (``core.outputs.export_targets``, named after each document)."""
    from core.api import export_targets

    return export_targets(markdown_paths, formats, Path(folder), pattern)


def batch_conflicts(targets: list[dict]) -> list[Path]:
    return [p for per_format in targets for p in per_format.values() if os.path.lexists(p)]


def stats_payload(input_path: Path, markdown_path: Path | None, settings: dict, results) -> dict:
    from core.api import document_stats

    return document_stats(str(input_path), str(markdown_path or ""), settings,
                          sorted(results, key=lambda r: r.page))


def export_json(json_path: Path, input_path: Path, markdown_path: Path | None, settings: dict, results,
                overwrite: bool = False, edits=None, work_markdown: Path | None = None) -> Path:
    """Regions (with drafts, outputs, per-region statistics and acceptance), page statistics, each
    page's Markdown as exported and where the model departs from the page's text: ``--stats``'
    document with what ``hsd export --format json`` adds (``core.exports.document_payload``)."""
    from core.api import document_payload

    json_path = Path(json_path)
    if json_path.exists() and not overwrite:
        raise ExportConflict([json_path])
    document = finished_document(work_markdown or markdown_path or json_path.with_suffix(".md"), results, settings,
                                 input_path, edits)
    payload = document_payload(document)
    payload["output"] = str(markdown_path or "")
    atomic_write_text(json_path, json.dumps(payload, indent=1, ensure_ascii=False))
    return json_path


def export_problem(target: Path, exc: BaseException) -> str:
    """Why an export to ``target`` failed, in one line that names the user's target and never a
    temporary file the export writes beside it (``.NAME.md.hsd``, ``.NAME.tmp``)."""
    target = Path(target)
    if not isinstance(exc, OSError) or isinstance(exc, ExportConflict):
        return f"Cannot write {target}: {exc}"
    return f"Cannot write {target}: {_folder_problem(target.parent) or _os_reason(exc)}"


def _folder_problem(folder: Path) -> str:
    """What keeps files from being written in ``folder``, if the file system says so at once."""
    for place in (folder, *folder.parents):  # the export makes missing folders: the nearest one there counts
        if os.path.lexists(place):
            if not place.is_dir():
                return f"{place} is a file, not a folder"
            if not os.access(place, os.W_OK | os.X_OK):
                return f"no permission to write in {place}"
            return ""
    return ""


def _os_reason(exc: OSError) -> str:
    known = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
             errno.EROFS: "the disk is read-only", errno.EACCES: "permission denied",
             errno.EPERM: "permission denied", errno.ENAMETOOLONG: "the name is too long"}
    return known.get(exc.errno) or (exc.strerror or type(exc).__name__).lower()


def copy_to_clipboard(text: str) -> None:
    from PySide6.QtGui import QGuiApplication

    QGuiApplication.clipboard().setText(text)
