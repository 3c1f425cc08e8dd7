"""``hsd export NAME.md... --format html,docx [--to FOLDER] [--name PATTERN]``: export converted documents.

Reads what ``hsd convert`` saved (the pages in each Markdown's resume folder, the figures, and the
corrections made in HSD Studio), so it needs neither the inputs nor a model, and writes each document
as Markdown with its figures, HTML with formulas typeset as MathML, DOCX with formulas as Word
equations, or JSON with regions, acceptance and departures. A Markdown file without its resume
folder still exports (HTML, DOCX, JSON of its text). Nothing that exists is replaced without
``--overwrite``, and everything is checked before the first file is written.

A command of its own rather than ``hsd convert --format``: an export of finished documents loads no
model and reads no input, documents converted at different times export in one batch under one
naming pattern, and the edits made in the app are written by the same path.
"""

from __future__ import annotations

import argparse
import sys

SUMMARY = "export converted documents as Markdown, HTML (MathML), DOCX or JSON, in a batch"


def _formats(value: str) -> list[str]:
    from core.exports import parse_formats

    try:
        return parse_formats(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers) -> None:
    from core.outputs import EXPORT_PATTERN

    parser = subparsers.add_parser("export", help=SUMMARY, description=__doc__.split("\n\n", 1)[1].split("\n\n")[0])
    parser.add_argument("markdown", nargs="+", metavar="NAME.md", help="Markdown files hsd convert wrote")
    parser.add_argument("--format", "-f", type=_formats, default=["html"], metavar="FORMATS",
                        help="comma-separated: md, html, docx, json (default html)")
    parser.add_argument("--to", default=None, metavar="FOLDER",
                        help="folder to write into (made if missing; default: beside each Markdown file)")
    parser.add_argument("--name", default=EXPORT_PATTERN, metavar="PATTERN",
                        help="file name of each export: {stem} (the Markdown's name without .md), {n} (its "
                             "number in the batch), {parent} (its folder's name), {ext} (the format) "
                             f"(default {EXPORT_PATTERN})")
    parser.add_argument("--overwrite", action="store_true", help="replace files that exist already")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.exports import export_documents
    from core.outputs import check_output_folder, distinct_inputs

    folder = Path(args.to) if args.to else None
    if folder is not None:
        check_output_folder(folder, "--to")
    sources = distinct_inputs(args.markdown)

    def said(document, per_format) -> None:
        edited = document.edited_pages()
        note = f" ({len(edited)} edited page{'s' if len(edited) != 1 else ''})" if edited else ""
        print(f"{document.markdown_path} -> {', '.join(str(p) for p in per_format.values())}{note}", file=sys.stderr)

    written = export_documents(sources, args.format, folder, args.name, args.overwrite, progress=said)
    print(f"{len(written)} file{'s' if len(written) != 1 else ''} written", file=sys.stderr)
    return 0
