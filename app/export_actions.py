"""The window's export commands: Markdown, JSON and the clipboard, never overwriting unasked."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox


class ExportActions:
    """Mixed into ``MainWindow`` (uses its ``current``, ``app_settings``, ``show_error``, ``set_status``)."""

    def _remember_folder(self, path: str) -> None:
        from app.window_state import set_last_folder

        set_last_folder(self.app_settings.q, str(Path(path).parent))

    def _export_ready(self):
        doc = self.current
        if doc is None or not doc.results:
            self.show_error("Nothing to export", "Convert a document first.")
            return None
        return doc

    def ask_overwrite(self, paths) -> bool:
        names = "\n".join(str(p) for p in paths[:8]) + ("\n…" if len(paths) > 8 else "")
        answer = QMessageBox.question(self, "Replace files?", f"These files exist already:\n{names}\n\nReplace them?",
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def export_markdown_dialog(self) -> None:
        doc = self._export_ready()
        if doc is None:
            return
        default = str(Path(self._last_dir()) / f"{doc.path.stem}.md")
        path, _ = QFileDialog.getSaveFileName(self, "Export Markdown", default, "Markdown (*.md)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self._remember_folder(path)
            self.export_markdown_to(Path(path))

    def export_markdown_to(self, path: Path) -> Path | None:
        from app.export import export_markdown, markdown_conflicts

        doc = self._export_ready()
        if doc is None:
            return None
        path = Path(path)
        if path.suffix.lower() != ".md":
            path = path.with_name(path.name + ".md")
        results = list(doc.results.values())
        conflicts = markdown_conflicts(path, results)
        if conflicts and not self.ask_overwrite(conflicts):
            self.set_status("Export cancelled: nothing was overwritten")
            return None
        settings = doc.settings or self.app_settings.conversion()
        try:
            written = export_markdown(doc.path, path, results, settings.output_settings(), settings.dpi,
                                      password=doc.password, overwrite=True)
        except Exception as exc:
            self.show_error("Export failed", str(exc))
            return None
        doc.exported_markdown = written
        self.set_status(f"Exported Markdown to {written}")
        return written

    def export_json_dialog(self) -> None:
        doc = self._export_ready()
        if doc is None:
            return
        default = str(Path(self._last_dir()) / f"{doc.path.stem}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Export regions and statistics", default, "JSON (*.json)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self._remember_folder(path)
            self.export_json_to(Path(path))

    def export_json_to(self, path: Path) -> Path | None:
        from app.export import export_json

        doc = self._export_ready()
        if doc is None:
            return None
        path = Path(path)
        if path.exists() and not self.ask_overwrite([path]):
            self.set_status("Export cancelled: nothing was overwritten")
            return None
        settings = doc.settings or self.app_settings.conversion()
        try:
            written = export_json(path, doc.path, doc.exported_markdown, settings.output_settings(),
                                  list(doc.results.values()), overwrite=True)
        except Exception as exc:
            self.show_error("Export failed", str(exc))
            return None
        self.set_status(f"Exported regions and statistics to {written}")
        return written

    def copy_markdown(self) -> None:
        from app.export import copy_to_clipboard

        text = self.markdown_view.current_text()
        copy_to_clipboard(text)
        self.set_status(f"Copied {len(text):,} characters of Markdown")

