"""``hsd draft``: run a drafter over a document and print or save its regions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core import tuning
from core.commands.arguments import (add_ocr_arguments, add_password_arguments, add_rotate_argument, page_range,
                                     whole_number)
from core.drafters import DRAFTER_NAMES, SCAN_LAYOUTS
from core.errors import one_line


#: The line ``hsd --help`` shows for this command.
SUMMARY = "show the drafter's regions (label, bbox, text) for a PDF or image"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "draft", help=SUMMARY,
        description="Draft each page of INPUT with a cheap drafter (text layer or OCR) and print the "
        "regions in reading order, or write them as JSON.",
    )
    parser.add_argument("input", metavar="INPUT", help="PDF or image (PNG, JPEG, TIFF, BMP, WebP, GIF)")
    parser.add_argument("--pages", metavar="R", default=None, type=page_range, help='pages, e.g. "1-3,7", "5-", "-2" (default: all)')
    parser.add_argument("--drafter", choices=DRAFTER_NAMES, default=tuning.DEFAULT_DRAFTER,
                        help=f"which drafter (default: {tuning.DEFAULT_DRAFTER}: text layer if usable, else OCR)")
    parser.add_argument("--dpi", type=whole_number(36, 1200, "dpi"), default=None,
                        help="render resolution for OCR (default: RapidOCR the scan's own within "
                             f"{tuning.MIN_OCR_DPI}-{tuning.MAX_OCR_DPI}, else {tuning.DEFAULT_OCR_DPI}; "
                             f"PaddleOCR {tuning.PADDLE_DPI})")
    add_password_arguments(parser)
    parser.add_argument("--scan-layout", choices=SCAN_LAYOUTS, default=tuning.DEFAULT_SCAN_LAYOUT,
                        help=f"layout model of the OCR drafters on scans (default {tuning.DEFAULT_SCAN_LAYOUT}; "
                             "see hsd convert)")
    add_ocr_arguments(parser)
    add_rotate_argument(parser)
    parser.add_argument("--json", metavar="OUT", default=None, help="write JSON here ('-' for stdout) instead of the readable listing")
    parser.add_argument("--overwrite", action="store_true",
                        help="let --json replace an existing file this tool did not write (default: refuse and "
                             "name it)")
    parser.set_defaults(func=run)


def _drafter_options(name: str, dpi: int | None) -> dict:
    return {"dpi": dpi} if dpi and name in ("rapidocr", "auto", "paddle") else {}


def run(args) -> int:
    from core.commands.arguments import resolve_password
    from core.inputs import check_input
    from core.outputs import refuse_unsafe_json_output

    check_input(Path(args.input))  # a mistyped name: one line before PyMuPDF or a drafter loads
    if args.json not in (None, "-"):
        refuse_unsafe_json_output(Path(args.json), Path(args.input), overwrite=args.overwrite)
    resolve_password(args)
    from core.documents import open_document, parse_page_range
    from core.drafters import drafter_spec, get_drafter

    failed: list[tuple[int, str, str]] = []  # (page, drafter, error)
    with open_document(args.input, password=args.password, rotate=args.rotate) as doc:
        indices = parse_page_range(args.pages, doc.page_count)
        drafter = get_drafter(drafter_spec(args.drafter, args.scan_layout, args.ocr_workers, args.ocr_device), **_drafter_options(args.drafter, args.dpi))
        pages_out = []
        for index in indices:
            page = _page_or_record(doc, index, pages_out, listing=args.json is None)
            if page is None:  # not readable: said once below, in the document's "damaged" line
                continue
            used = drafter.choose(page)
            record = {"page": page.number, "width": round(page.width, 2), "height": round(page.height, 2),
                      "drafter": used.name}
            try:
                if page.turn:  # the page as the model sees it: turned upright (``--rotate auto``)
                    record["turn"] = page.turn
                record["regions"] = [_region_json(r) for r in drafter.draft(page)]
                if drafter.last_step is not None:  # ``auto``: which of its steps drafted the page
                    record["step"] = drafter.last_step
            except Exception as exc:  # one bad page costs that page, not the others
                record["regions"], record["error"] = [], f"{type(exc).__name__}: {exc}"
                failed.append((page.number, used.name, record["error"]))
            if args.json is None:
                _print_page(record)
            pages_out.append(record)
        damaged, unreadable = doc.damaged, bool(doc.unreadable_pages)
    if args.json is not None:
        from core.outputs import drafts_payload

        text = json.dumps(drafts_payload(str(args.input), pages_out), ensure_ascii=False, indent=1)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            from core.export import atomic_write_text

            atomic_write_text(Path(args.json), text + "\n")
            print(f"wrote {len(pages_out)} page(s) of regions to {one_line(args.json)}", file=sys.stderr)
    if damaged:
        print(one_line(f"hsd: warning: {args.input}: {damaged}"), file=sys.stderr)
    if failed:  # one line however many pages failed; each page's error is in the listing / JSON
        _, name, first = failed[0]
        if len(failed) == len(pages_out):
            print(one_line(f"hsd: error: the {name} drafter failed on every page ({first})"), file=sys.stderr)
        else:
            numbers = ", ".join(str(n) for n, _, _ in failed)
            print(one_line(f"hsd: warning: page(s) {numbers} could not be drafted ({first}); the others were"),
                  file=sys.stderr)
    return 1 if failed or unreadable else 0


def _page_or_record(doc, index: int, pages_out: list, listing: bool):
    """Page ``index`` of ``doc``, or None when it cannot be read: then its record (with the error)
    joins ``pages_out`` and the listing, and the next pages are still drafted."""
    from core.errors import CorruptDocumentError

    try:
        return doc.page(index)
    except CorruptDocumentError as exc:
        record = {"page": index + 1, "regions": [], "error": str(exc)}
        if listing:
            print(f"=== page {index + 1} (not read: {exc})")
        pages_out.append(record)
        return None


def _region_json(region) -> dict:
    d = region.to_dict()
    out = {k: d[k] for k in ("label", "bbox", "text", "source", "confidence")}
    extra = d.get("extra", {})
    # a region read turned; a page drafted by a fallback step; which source drafted a region of a
    # text layer checked (``core.drafters.textlayer_check``) and why, with OCR's draft beside it
    for key in ("turn", "drafted_by", "source_reason", "second_draft"):
        if key in extra:
            out[key] = extra[key]
    return out


def _print_page(record: dict) -> None:
    shown = "".join(f" {key}={record[key]}" for key in ("turn", "step") if key in record)
    print(f"=== page {record['page']} ({record['width']:.0f} x {record['height']:.0f} pt) "
          f"drafter={record['drafter']}{shown} regions={len(record['regions'])}")
    if "error" in record:
        print(f"    (not drafted: {record['error']})")
    for r in record["regions"]:
        x0, y0, x1, y1 = r["bbox"]
        said = f" source={r['source']} ({r['source_reason']})" if "source_reason" in r else ""
        print(f"[{r['label']}] ({x0:.0f},{y0:.0f},{x1:.0f},{y1:.0f}) conf={r['confidence']:.2f}{said}")
        for line in r["text"].splitlines() or [""]:
            print(f"    {line}")
        for line in r.get("second_draft", "").splitlines():
            print(f"    | {line}")  # OCR's draft of the crop, beside the text layer's
    sys.stdout.flush()
