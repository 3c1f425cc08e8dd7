"""The window's export commands: Markdown, HTML, DOCX, JSON, all documents at once and the clipboard,
never overwriting unasked, and never quiet about what the document's "done" hides (pages cut at the
token limit, failed, damaged). Pages the user edited are exported as edited (``app.page_editing``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from app import page_story
from app.widgets import ask_yes_no


class ExportActions:
    """Owned by the window; exports the window's current document."""

    def __init__(self, window):
        self.window = window

    def _remember_folder(self, path: str) -> None:
        from app.window_state import set_last_folder

        set_last_folder(self.window.app_settings.q, str(Path(path).parent))

    def _ready(self):
        doc = self.window.current
        if doc is None or not doc.results:
            self.window.show_error("Nothing to export", "Convert a document first.")
            return None
        return doc

    def ask_overwrite(self, paths) -> bool:
        names = "\n".join(str(p) for p in paths[:8]) + ("\n…" if len(paths) > 8 else "")
        return ask_yes_no(self.window, "Replace files?", f"These files exist already:\n{names}\n\nReplace them?")

    def _exported(self, doc, what: str, written: Path) -> None:
        notes = page_story.trouble(doc)
        self.window.set_status(f"Exported {what} to {written}" + (f" · {'; '.join(notes)}" if notes else ""),
                               details="; ".join(notes))

    def _ask_path(self, doc, title: str, suffix: str, kind: str) -> Path | None:
        default = str(Path(self.window.dialog_folder()) / f"{doc.path.stem}{suffix}")
        notes = page_story.trouble(doc)
        if notes:
            title += f" (note: {'; '.join(notes)})"
        path, _ = QFileDialog.getSaveFileName(self.window, title, default, kind,
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if not path:
            return None
        self._remember_folder(path)
        return Path(path)

    def markdown_dialog(self) -> None:
        doc = self._ready()
        path = doc and self._ask_path(doc, "Export Markdown", ".md", "Markdown (*.md)")
        if path:
            self.markdown_to(path)

    def markdown_to(self, path: Path) -> Path | None:
        from app.export import export_markdown, export_problem, markdown_conflicts

        doc = self._ready()
        if doc is None:
            return None
        path = Path(path)
        if path.suffix.lower() != ".md":
            path = path.with_name(path.name + ".md")
        results = list(doc.results.values())
        conflicts = markdown_conflicts(path, results)
        if conflicts and not self.ask_overwrite(conflicts):
            self.window.set_status("Export cancelled: nothing was overwritten")
            return None
        settings = doc.settings or self.window.app_settings.conversion()
        from app.page_editing import exported_texts

        try:
            written = export_markdown(doc.path, path, results, settings.output_settings(), settings.dpi,
                                      password=doc.password, overwrite=True, texts=exported_texts(self.window, doc))
        except Exception as exc:
            self.window.show_error("Export failed", export_problem(path, exc))
            return None
        doc.exported_markdown = written
        self._exported(doc, "Markdown", written)
        return written

    def json_dialog(self) -> None:
        doc = self._ready()
        path = doc and self._ask_path(doc, "Export regions and statistics", ".json", "JSON (*.json)")
        if path:
            self.json_to(path)

    def json_to(self, path: Path) -> Path | None:
        from app.export import export_json, export_problem

        doc = self._ready()
        if doc is None:
            return None
        path = Path(path)
        if path.exists() and not self.ask_overwrite([path]):
            self.window.set_status("Export cancelled: nothing was overwritten")
            return None
        settings = doc.settings or self.window.app_settings.conversion()
        from app.page_editing import edits_of, work_markdown

        try:
            written = export_json(path, doc.path, doc.exported_markdown, settings.output_settings(),
                                  list(doc.results.values()), overwrite=True, edits=edits_of(self.window, doc),
                                  work_markdown=work_markdown(self.window, doc))
        except Exception as exc:
            self.window.show_error("Export failed", export_problem(path, exc))
            return None
        self._exported(doc, "regions and statistics", written)
        return written

    # -- HTML and DOCX --------------------------------------------------------------------------------

    def html_dialog(self) -> None:
        doc = self._ready()
        path = doc and self._ask_path(doc, "Export HTML", ".html", "HTML (*.html)")
        if path:
            self.html_to(path)

    def docx_dialog(self) -> None:
        doc = self._ready()
        path = doc and self._ask_path(doc, "Export Word document", ".docx", "Word (*.docx)")
        if path:
            self.docx_to(path)

    def html_to(self, path: Path) -> Path | None:
        return self._format_to("html", path, "HTML")

    def docx_to(self, path: Path) -> Path | None:
        return self._format_to("docx", path, "Word document")

    def _document(self, doc):
        from app.export import finished_document
        from app.page_editing import edits_of, work_markdown

        settings = doc.settings or self.window.app_settings.conversion()
        return finished_document(work_markdown(self.window, doc), list(doc.results.values()),
                                 settings.output_settings(), doc.path, edits_of(self.window, doc))

    def _format_to(self, fmt: str, path: Path, what: str) -> Path | None:
        from app.export import export_as, export_problem

        doc = self._ready()
        if doc is None:
            return None
        path = Path(path)
        if path.suffix.lower() != f".{fmt}":
            path = path.with_name(f"{path.name}.{fmt}")
        if path.exists() and not self.ask_overwrite([path]):
            self.window.set_status("Export cancelled: nothing was overwritten")
            return None
        try:
            written = export_as(self._document(doc), fmt, path, overwrite=True)
        except Exception as exc:
            self.window.show_error("Export failed", export_problem(path, exc))
            return None
        self._exported(doc, what, written)
        return written

    # -- every document at once -------------------------------------------------------------------------

    def batch_dialog(self) -> None:
        from app.export_dialog import BatchExportDialog

        if not self._finished_documents():
            self.window.show_error("Nothing to export", "Convert a document first.")
            return
        dialog = BatchExportDialog(self.window, self.window.dialog_folder(), self.window.app_settings)
        if dialog.exec():
            folder, formats, pattern = dialog.choice()
            self._remember_folder(str(Path(folder) / "x"))
            self.batch_to(folder, formats, pattern)

    def _finished_documents(self) -> list:
        running = self.window.conversion.running
        return [d for d in self.window.conversion.documents if d.results and d is not running]

    def batch_to(self, folder: Path, formats, pattern: str) -> list[Path] | None:
        """Every finished document in ``formats`` into ``folder``, named by ``pattern``; asks once before
        replacing anything."""
        from app.export import batch_conflicts, batch_targets, export_as, export_problem

        docs = self._finished_documents()
        if not docs:
            self.window.show_error("Nothing to export", "Convert a document first.")
            return None
        names = [Path(d.path.with_suffix(".md").name) if d.path.suffix else Path(d.path.name + ".md") for d in docs]
        try:
            targets = batch_targets([Path(d.path.parent) / n for d, n in zip(docs, names)], formats, folder, pattern)
        except Exception as exc:  # HSDError: a pattern that names no file, two documents on one name
            self.window.show_error("Cannot export", str(exc))
            return None
        conflicts = batch_conflicts(targets)
        if conflicts and not self.ask_overwrite(conflicts):
            self.window.set_status("Export cancelled: nothing was overwritten")
            return None
        written = []
        for doc, per_format in zip(docs, targets):
            for fmt, path in per_format.items():
                try:
                    if fmt == "md":
                        written.append(self._markdown_file(doc, path))
                    elif fmt == "json":
                        written.append(self._json_file(doc, path))
                    else:
                        written.append(export_as(self._document(doc), fmt, path, overwrite=True))
                except Exception as exc:
                    self.window.show_error("Export failed", export_problem(path, exc))
                    return None
        self.window.set_status(f"Exported {len(docs)} document{'s' if len(docs) != 1 else ''} "
                               f"({len(written)} files) to {folder}")
        return written

    def _markdown_file(self, doc, path: Path) -> Path:
        from app.export import export_markdown
        from app.page_editing import exported_texts

        settings = doc.settings or self.window.app_settings.conversion()
        return export_markdown(doc.path, path, list(doc.results.values()), settings.output_settings(), settings.dpi,
                               password=doc.password, overwrite=True, texts=exported_texts(self.window, doc))

    def _json_file(self, doc, path: Path) -> Path:
        from app.export import export_json
        from app.page_editing import edits_of, work_markdown

        settings = doc.settings or self.window.app_settings.conversion()
        return export_json(path, doc.path, None, settings.output_settings(), list(doc.results.values()),
                           overwrite=True, edits=edits_of(self.window, doc),
                           work_markdown=work_markdown(self.window, doc))

    def copy_markdown(self) -> None:
        from app.export import copy_to_clipboard

        text = self.window.markdown_view.current_text()
        copy_to_clipboard(text)
        self.window.set_status(f"Copied {len(text):,} characters of Markdown")
