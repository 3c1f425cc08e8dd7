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
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.settings import AppSettings

    app = QApplication.instance() or QApplication([sys.argv[0]])
    app.setApplicationName("HSD Studio")
    settings = AppSettings()
    if args.model:
        conversion = settings.conversion()
        conversion.model = args.model
        settings.set_conversion(conversion)
    window = MainWindow(settings)
    window.show()
    if args.files:
        window.add_files(args.files, convert=not args.no_convert)
    return app.exec()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
