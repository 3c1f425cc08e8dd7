"""``hsd-studio [FILE ...]``: the desktop app."""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hsd-studio",
                                     description="Convert PDFs and page images to Markdown and see where the "
                                     "model trusted the draft (HSD Studio).")
    parser.add_argument("files", nargs="*", metavar="FILE", help="PDFs or images to open and convert")
    parser.add_argument("--model", default=None, help="hub id or model folder (saved in the settings)")
    parser.add_argument("--no-convert", action="store_true", help="open the files without converting")
    parser.add_argument("--settings", default=os.environ.get("HSD_STUDIO_SETTINGS"), metavar="FILE.ini",
                        help="keep settings in this ini file instead of the user's (default: "
                        "$HSD_STUDIO_SETTINGS if set)")
    parser.add_argument("--exit-when-done", action="store_true",
                        help="convert FILEs, then quit: exit code 0 if every page converted, else 1 "
                        "(for scripts and the bundle's smoke test)")
    parser.add_argument("--export-dir", default=None, metavar="DIR",
                        help="with --exit-when-done: export each converted document as DIR/NAME.md")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.settings import AppSettings

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setApplicationName("HSD Studio")
    settings = AppSettings(QSettings(args.settings, QSettings.Format.IniFormat) if args.settings else None)
    if args.model:
        conversion = settings.conversion()
        conversion.model = args.model
        settings.set_conversion(conversion)
    window = MainWindow(settings)
    window.show()
    if args.exit_when_done:
        if not args.files or args.no_convert:
            print("hsd-studio: --exit-when-done needs FILEs to convert", file=sys.stderr)
            return 2
        window.document_finished.connect(lambda _status: _exit_if_idle(app, window, args.export_dir))
    if args.files:
        window.add_files(args.files, convert=not args.no_convert)
    if args.exit_when_done and not window.conversion.busy:  # nothing could be opened: quit once the loop runs
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, lambda: _exit_if_idle(app, window, args.export_dir))
    code = app.exec()
    if window.quit_mid_conversion:
        # Quit mid-conversion: the finished pages are saved already, and the worker (a model loading,
        # a drafter reading a scan) or the loaded model's teardown could keep a closed app running.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _exit_if_idle(app, window, export_dir: str | None) -> None:
    """Quit once nothing is queued or converting: 0 if every document converted without failed pages."""
    if window.conversion.busy or any(doc.status == "queued" for doc in window.documents):
        return
    ok = bool(window.documents) and all(
        doc.status == "done" and doc.results and not any(r.error for r in doc.results.values())
        for doc in window.documents)
    if ok and export_dir:
        from pathlib import Path

        from app.export import export_markdown, export_problem

        for doc in window.documents:
            settings = doc.settings or window.app_settings.conversion()
            target = Path(export_dir) / f"{doc.path.stem}.md"
            try:
                export_markdown(doc.path, target, list(doc.results.values()),
                                settings.output_settings(), settings.dpi, password=doc.password, overwrite=True)
            except Exception as exc:
                print(f"hsd-studio: export of {doc.path.name} failed: {export_problem(target, exc)}",
                      file=sys.stderr)
                ok = False
    if not window.documents and window.last_error:
        for line in window.last_error.splitlines():  # several files that could not be opened: one line each
            print(f"hsd-studio: {line}", file=sys.stderr)
    for doc in window.documents:
        if doc.status != "done" or doc.error:
            print(f"hsd-studio: {doc.path.name}: {doc.status}{': ' + doc.error if doc.error else ''}",
                  file=sys.stderr)
    app.exit(0 if ok else 1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
