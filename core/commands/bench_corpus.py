"""``hsd bench-corpus``: make a benchmark corpus (PDFs with reference Markdown) from Markdown sources."""

from __future__ import annotations

from pathlib import Path

from core.commands.arguments import whole_number


#: The line ``hsd --help`` shows for this command.
SUMMARY = "make a corpus for 'hsd bench' from Markdown files"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench-corpus", help=SUMMARY,
        description="Typeset each Markdown SOURCE (a .md file or a wheel's METADATA) as a PDF, write the "
        "reference Markdown beside it, and optionally an image-only scan of it, in the layout 'hsd bench' "
        "reads (OUT/pairs/NAME.pdf + NAME.md). Use it to check the benchmark on documents the engine "
        "was never tuned on.",
    )
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="Markdown files or METADATA files")
    parser.add_argument("--out", required=True, help="corpus folder to write (pairs/ is created in it)")
    parser.add_argument("--scans", action="store_true", help="also write an image-only copy of each PDF (scan_NAME)")
    parser.add_argument("--scan-dpi", type=whole_number(72, 400, "the scan resolution"), default=150, help="resolution of the scans (default 150)")
    parser.add_argument("--max-chars", type=whole_number(200, 1_000_000, "--max-chars"), default=12000,
                        help="cut each source after this many characters of reference, at a block boundary (default 12000)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from core.bench.make_corpus import make_corpus

    out = Path(args.out)
    stems = make_corpus([Path(s) for s in args.sources], out, scans=args.scans, max_chars=args.max_chars,
                        scan_dpi=args.scan_dpi)
    print(f"wrote {len(stems)} documents to {out / 'pairs'}; run: hsd bench {out}")
    return 0
