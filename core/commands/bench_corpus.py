"""``hsd bench-corpus``: make a benchmark corpus (PDFs with reference Markdown) from Markdown sources."""

from __future__ import annotations

from pathlib import Path

from core.commands.arguments import whole_number
from core.errors import HSDError


#: The line ``hsd --help`` shows for this command.
SUMMARY = "make a corpus for 'hsd bench' from Markdown files"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench-corpus", help=SUMMARY,
        description="Typeset each Markdown SOURCE (a .md file or a wheel's METADATA) as a PDF, write the "
        "reference Markdown beside it, and optionally an image-only scan of it, in the layout 'hsd bench' "
        "reads (OUT/pairs/NAME.pdf + NAME.md). Use it to check the benchmark on documents the engine "
        "was never tuned on. With --scan-set, write the generated scan set instead: pages of thirteen kinds "
        "(articles in one to three columns, newspapers, gazettes, reports, formulas, forms, slides, Chinese, "
        "Japanese, mixed, Fraktur), each born-digital (OUT/born) and scanned (OUT/scan), from a seed.",
    )
    parser.add_argument("sources", nargs="*", metavar="SOURCE", help="Markdown files or METADATA files")
    parser.add_argument("--out", required=True, help="corpus folder to write (pairs/ is created in it)")
    parser.add_argument("--scans", action="store_true", help="also write an image-only copy of each PDF (scan_NAME)")
    parser.add_argument("--scan-dpi", type=whole_number(72, 400, "the scan resolution"), default=150, help="resolution of the scans (default 150)")
    parser.add_argument("--max-chars", type=whole_number(200, 1_000_000, "--max-chars"), default=12000,
                        help="cut each source after this many characters of reference, at a block boundary (default 12000)")
    parser.add_argument("--scan-set", action="store_true",
                        help="write the generated scan set (no SOURCE): OUT/born, OUT/scan, OUT/layout")
    parser.add_argument("--seed", type=whole_number(0, 2**31 - 1, "--seed"), default=None,
                        help="--scan-set: the seed every page follows from (default 29)")
    parser.add_argument("--per-kind", type=whole_number(1, 1000, "--per-kind"), default=None,
                        help="--scan-set: pages of each kind (default 12: 156 pages)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from core.bench.make_corpus import make_corpus

    out = Path(args.out)
    if args.scan_set:
        from core.bench import scan_set

        if args.sources:
            raise HSDError("--scan-set makes its own pages: give no SOURCE")
        names = scan_set.make_scan_set(out, scan_set.DEFAULT_SEED if args.seed is None else args.seed,
                                       args.per_kind or scan_set.PAGES_PER_KIND)
        print(f"wrote {len(names)} pages to {out / 'born'} and {out / 'scan'}; run: hsd bench {out / 'scan'}")
        return 0
    if not args.sources:
        raise HSDError("give at least one SOURCE, or --scan-set")
    stems = make_corpus([Path(s) for s in args.sources], out, scans=args.scans, max_chars=args.max_chars,
                        scan_dpi=args.scan_dpi)
    print(f"wrote {len(stems)} documents to {out / 'pairs'}; run: hsd bench {out}")
    return 0
