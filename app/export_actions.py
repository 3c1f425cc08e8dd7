"""The window's export commands: Markdown, JSON and the clipboard, never overwriting unasked, and
never quiet about what the document's "done" hides (pages cut at the token limit, failed, damaged)."""

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
        default = str(Path(self.window._last_dir()) / f"{doc.path.stem}{suffix}")
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
        try:
            written = export_markdown(doc.path, path, results, settings.output_settings(), settings.dpi,
                                      password=doc.password, overwrite=True)
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
        try:
            written = export_json(path, doc.path, doc.exported_markdown, settings.output_settings(),
                                  list(doc.results.values()), overwrite=True)
        except Exception as exc:
            self.window.show_error("Export failed", export_problem(path, exc))
            return None
        self._exported(doc, "regions and statistics", written)
        return written

    def copy_markdown(self) -> None:
        from app.export import copy_to_clipboard

        text = self.window.markdown_view.current_text()
        copy_to_clipboard(text)
        self.window.set_status(f"Copied {len(text):,} characters of Markdown")
