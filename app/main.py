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
    """Run the app; once its window has closed, the process ends (``end_process``)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from PySide6.QtCore import QSettings

    from app.main_window import MainWindow
    from app.settings import AppSettings

    app = application()
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
    end_process(code, settings)
    return code  # not reached


def application():
    """The process's QApplication, named, with Python's reference cycles collected on its thread
    only (``app.cycle_collector``): a window freed by a collection on a conversion's thread would
    hang or crash the app."""
    from PySide6.QtWidgets import QApplication

    from app.cycle_collector import GuiThreadCollector

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setApplicationName("HSD Studio")
    if app.findChild(GuiThreadCollector) is None:
        GuiThreadCollector(parent=app).start()
    return app


def end_process(code: int, settings) -> None:
    """End the app's process at once, once the window has closed.

    Everything is saved by then (pages as they finish, the Markdown at a document's end, the
    settings when changed and the layout on close). What is left would only keep a closed app
    running: Python tearing down torch, transformers and the model takes seconds (2-4 on an idle
    computer, tens on a busy one), the drafting process runs at a lower priority and so ends late on a
    busy computer, and after a quit mid-conversion the worker may still be loading a model or
    reading a scan."""
    settings.q.sync()
    sys.stdout.flush()
    sys.stderr.flush()
    end_child_processes()
    os._exit(code)


def end_child_processes() -> None:
    """Stop the drafting process (and any other child) without waiting for it: given back the normal
    priority first, where the system allows, so that it ends at once on a busy computer too."""
    import multiprocessing

    for child in multiprocessing.active_children():
        if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_OTHER"):
            try:
                threads = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
            except OSError:
                threads = [child.pid]
            for thread in threads:
                try:
                    os.sched_setscheduler(thread, os.SCHED_OTHER, os.sched_param(0))
                except OSError:
                    pass  # not allowed here (or already gone): it ends at its own pace
        try:
            child.kill()
        except OSError:
            pass


def _exit_if_idle(app, window, export_dir: str | None) -> None:
    """Quit once nothing is queued or converting: 0 if every document converted without failed pages."""
    from app.document_state import DocumentStatus

    if window.conversion.busy or any(doc.status == DocumentStatus.QUEUED for doc in window.documents):
        return
    ok = bool(window.documents) and all(
        doc.status == DocumentStatus.DONE and doc.results and not any(r.error for r in doc.results.values())
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
        if doc.status != DocumentStatus.DONE or doc.error:
            print(f"hsd-studio: {doc.path.name}: {doc.status}{': ' + doc.error if doc.error else ''}",
                  file=sys.stderr)
    app.exit(0 if ok else 1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
