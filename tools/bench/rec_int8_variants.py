"""The recogniser's int8 variants against its full model: CPU, lines read differently, hsd passes.

    python -m tools.bench.rec_int8_variants lines SET --variants all,inner,convs [--every N] [--json OUT.json]
    python -m tools.bench.rec_int8_variants bench VARIANT -- SET/scan --target replay ...
    python -m tools.bench.rec_int8_variants passes FULL_DIR VARIANT_DIR [VARIANT_DIR ...]

``lines``: every page of ``SET`` (a generated scan set's ``scan/pairs/*.pdf``, else ``SET/*.pdf``)
is drafted once by the full-precision drafter (``auto:layout=pymupdf``, as ``hsd bench`` drafts),
its process CPU seconds taken (every thread: the figure another program's load moves least), and
the line crops its recogniser read are kept; then each crop is read, one at a time on one thread,
by the full model and by each variant's int8 copy (``core.drafters.rec_int8``, made in
``$HSD_CACHE_DIR`` where not there yet), in turn page by page. Reported per variant: the
recogniser's CPU seconds over all lines, what that saves of the full drafter's page CPU, and the
lines whose text differs from the full model's.

``bench``: ``hsd bench`` with the drafter's int8 copy of ``VARIANT`` (``tuning.OCR_REC_INT8`` on,
``tuning.OCR_REC_INT8_VARIANT`` = ``VARIANT``; ``full``: neither), the arguments after ``--``
passed on. ``passes``: the hsd passes of each bench folder's pages (its ``pages.jsonl`` files, in
it and below) against the first's (the full model's drafts): totals, pages worse or better by
more than 2 %, per kind.
Not a test: the seconds depend on the machine; the passes and lines do not.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from tools.bench.drafting_seconds import PageDrafter, kind_of, pdfs_of, pipeline_of

SPEC = "auto:layout=pymupdf"


def session(path: Path):
    import onnxruntime

    from core.drafters.ocr_pipeline import runtime_options

    return onnxruntime.InferenceSession(str(path), sess_options=runtime_options(1),
                                        providers=["CPUExecutionProvider"])


def models(variants: list[str]) -> dict:
    """``{"full": Recogniser, variant: Recogniser, ...}``: the full model and each variant's copy."""
    from core.drafters.ocr_pipeline import REC_MODEL, model_file
    from core.drafters.ocr_recognise import Recogniser
    from core.drafters.rec_int8 import int8_model

    full = model_file(REC_MODEL)
    out = {"full": Recogniser(session(full))}
    for name in variants:
        path, note = int8_model(full, variant=name)
        if note:
            raise SystemExit(note)
        out[name] = Recogniser(session(path))
    return out


class CropsDrafter:
    """The full drafter (``PageDrafter``), keeping the crops its recogniser reads."""

    def __init__(self):
        self.drafter = PageDrafter(SPEC)
        self.crops: list | None = None

    def draft(self, pdf: Path) -> tuple[dict, list]:
        """The page drafted (``PageDrafter.draft``'s record) and the crops its recogniser read."""
        if self.crops is None:
            self.drafter.draft(pdf)  # the models loaded, so their recogniser can be watched
            recogniser = pipeline_of(self.drafter.drafter)._recogniser
            own = recogniser.read

            def read(batch):
                self.crops.extend(batch)
                return own(batch)

            recogniser.read = read
        self.crops = []
        return self.drafter.draft(pdf), self.crops


def lines(args) -> int:
    variants = [v for v in args.variants.split(",") if v]
    readers = models(variants)
    drafter = CropsDrafter()
    pages = []
    totals = defaultdict(float)
    differ = defaultdict(int)
    count = 0
    for n, pdf in enumerate(pdfs_of(args.set)[: args.limit or None][:: args.every]):
        record, crops = drafter.draft(pdf)
        page = {"file": pdf.name, "kind": kind_of(pdf), "page_cpu": record["cpu"], "lines": len(crops),
                "rec_cpu": {}, "differ": {}}
        texts = {}
        order = list(readers)
        order = order[n % len(order):] + order[:n % len(order)]  # none always reads first
        for name in order:
            reader = readers[name]
            cpu = time.process_time()
            texts[name] = [reader.read([crop])[0].text for crop in crops]
            page["rec_cpu"][name] = time.process_time() - cpu
            totals[name] += page["rec_cpu"][name]
        for name in variants:
            page["differ"][name] = sum(a != b for a, b in zip(texts["full"], texts[name]))
            differ[name] += page["differ"][name]
        totals["page"] += record["cpu"]
        count += len(crops)
        pages.append(page)
        print(f"{pdf.stem}: {len(crops)} lines, page {record['cpu']:.2f} s, "
              + ", ".join(f"{k} {v:.2f} s" for k, v in page["rec_cpu"].items())
              + "; differ " + ", ".join(f"{k} {v}" for k, v in page["differ"].items()), flush=True)
    print(f"\n{len(pages)} pages, {count} lines; full drafter {totals['page']:.1f} s CPU, "
          f"its recogniser {totals['full']:.1f} s")
    for name in variants:
        saved = totals["full"] - totals[name]
        print(f"{name:<14} recogniser {totals[name]:7.1f} s ({100 * saved / totals['full']:5.1f} % less), "
              f"page CPU {100 * saved / totals['page']:5.1f} % less, lines differing {differ[name]}/{count}")
    if args.json:
        args.json.write_text(json.dumps({"variants": variants, "totals": totals, "differ": differ,
                                         "pages": pages}, indent=1))
    return 0


def bench(args) -> int:
    from core import tuning
    from core.cli import main as hsd

    if args.variant != "full":
        from core.drafters.rec_int8 import variant_of

        variant_of(args.variant)  # an unknown one stops here, not silently at full precision
        tuning.OCR_REC_INT8, tuning.OCR_REC_INT8_VARIANT = True, args.variant
    return hsd(["bench", *args.rest])


def hsd_passes(folder: Path) -> dict:
    """``{page: (kind, hsd passes)}`` of every ``pages.jsonl`` in ``folder`` and below (a bench
    run in parts)."""
    out = {}
    for line in "\n".join(f.read_text() for f in sorted(folder.rglob("pages.jsonl"))).splitlines():
        record = json.loads(line) if line.strip() else {}
        if "doc" in record:
            out[record["doc"]] = (record["kind"], record["methods"]["hsd"]["forward_passes"])
    return out


def passes(args) -> int:
    full = hsd_passes(args.full)
    print(f"{args.full}: {len(full)} pages, hsd passes {sum(p for _, p in full.values())}")
    for folder in args.variants:
        other = hsd_passes(folder)
        both = sorted(set(full) & set(other))
        a, b = sum(full[d][1] for d in both), sum(other[d][1] for d in both)
        worse = [(d, full[d][1], other[d][1]) for d in both if other[d][1] > full[d][1] * 1.02]
        better = [(d, full[d][1], other[d][1]) for d in both if other[d][1] < full[d][1] * 0.98]
        kinds: dict = defaultdict(lambda: [0, 0])
        for d in both:
            kinds[full[d][0]][0] += full[d][1]
            kinds[full[d][0]][1] += other[d][1]
        print(f"\n{folder}: {len(both)} pages, hsd passes {a} -> {b} ({100 * (b / a - 1):+.1f} %)")
        print(f"  worse by > 2 %: {len(worse)}: " + ", ".join(f"{d} {x} -> {y}" for d, x, y in worse))
        print(f"  better by > 2 %: {len(better)}: " + ", ".join(f"{d} {x} -> {y}" for d, x, y in better))
        print("  per kind: " + ", ".join(f"{k} {x} -> {y}" for k, (x, y) in sorted(kinds.items())))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.rec_int8_variants", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("lines", help="recogniser CPU and lines read differently, per variant")
    p.add_argument("set", type=Path)
    p.add_argument("--variants", default="all,inner,convs")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--limit", type=int, default=0, help="only the first N pages")
    p.add_argument("--every", type=int, default=1, help="only every Nth page (default: all)")
    p = commands.add_parser("bench", help="hsd bench with a variant's int8 copy (or 'full')")
    p.add_argument("variant")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p = commands.add_parser("passes", help="hsd passes of bench folders against the full model's")
    p.add_argument("full", type=Path)
    p.add_argument("variants", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "bench" and args.rest[:1] == ["--"]:
        args.rest = args.rest[1:]
    return {"lines": lines, "bench": bench, "passes": passes}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
