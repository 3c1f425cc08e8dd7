"""Where a scan page's drafting CPU goes, counted: CPU seconds per stage and what the recogniser read.

    python -m tools.bench.drafting_counts SET [--limit N] [--json OUT.json]

Drafts every page of ``SET`` (as ``tools.bench.drafting_seconds``: the default drafter, models
loaded and the turn decided before the clock) and reports per page and in all:

* CPU seconds (``time.process_time``: all threads) of the page, of the detector step
  (``OcrPipeline.detect``), of the recognition step (``OcrPipeline.recognise``), of PyMuPDF's
  layout model (``scan_layout.layout_groups``) and the rest;
* the recogniser's own CPU (``time.thread_time`` around each run, on the thread that ran it);
* lines recognised, the pixel columns fed to the recogniser (each input's width at 48 px high)
  and of those the columns of lines read more than once (the same crop bytes), of lines that read
  empty (dropped) and of lines under rapidocr's text score (dropped from the regions);
* layout model calls a page.

The counts are taken by wrapping the pipeline's own objects in this process only; the drafts are
those of ``drafting_seconds``. Not a test: the seconds depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from tools.bench.drafting_seconds import PageDrafter, kind_of, pdfs_of, percentile, pipeline_of


class Tally:
    """What one page cost, filled by the wrappers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.cpu = Counter()
        self.lines = 0
        self.columns = 0
        self.rec_cpu = 0.0
        self.seen: Counter = Counter()
        self.again_columns = 0
        self.empty_lines = self.empty_columns = 0
        self.low_lines = self.low_columns = 0
        self.layout_calls = 0
        self.detected = 0


def input_columns(crop, min_width: int) -> int:
    """The recogniser's input width for ``crop`` read alone (``Recogniser.normalised``)."""
    return max(min_width, int(math.ceil(48 * crop.shape[1] / float(crop.shape[0]))))


def instrument(drafter, tally: Tally):
    """Wrap the loaded pipeline's stages, its recogniser's ``read`` and the layout step; returns
    the function that puts the layout step back (the module's, shared by the process)."""
    from core.drafters import scan_layout
    from core.drafters.ocr_pipeline import TEXT_SCORE

    pipeline = pipeline_of(drafter)
    recogniser = pipeline._recogniser
    read = recogniser.read

    def counted_read(crops):
        start = time.thread_time()
        out = read(crops)
        spent = time.thread_time() - start
        with tally.lock:
            tally.rec_cpu += spent
            for crop, line in zip(crops, out):
                cols = input_columns(crop, recogniser.min_width)
                key = hashlib.sha1(crop.tobytes()).hexdigest() + str(crop.shape)
                tally.lines += 1
                tally.columns += cols
                if tally.seen[key]:
                    tally.again_columns += cols
                tally.seen[key] += 1
                if not (line.text and line.text.strip()):
                    tally.empty_lines += 1
                    tally.empty_columns += cols
                elif line.score < TEXT_SCORE:
                    tally.low_lines += 1
                    tally.low_columns += cols
        return out

    recogniser.read = counted_read
    for pipe in {id(p): p for p in _pipelines(drafter)}.values():
        for stage in ("detect", "recognise"):
            _time_method(pipe, stage, tally)
        recognise = pipe.recognise

        def counted_recognise(found, *args, _recognise=recognise, **kwargs):
            tally.detected += len(found.crops)
            return _recognise(found, *args, **kwargs)

        pipe.recognise = counted_recognise
    groups = scan_layout.layout_groups

    def counted_groups(*args, **kwargs):
        start = time.process_time()
        try:
            return groups(*args, **kwargs)
        finally:
            tally.cpu["layout_model"] += time.process_time() - start
            tally.layout_calls += 1

    scan_layout.layout_groups = counted_groups

    def restore() -> None:
        scan_layout.layout_groups = groups

    return restore


def _pipelines(drafter):
    out = [pipeline_of(drafter)]
    lines_only = getattr(drafter, "_ocr_lines", None)
    if lines_only is not None and getattr(lines_only, "_ocr", None) is not None:
        out.append(lines_only._ocr)
    return [p for p in out if p is not None]


def _time_method(obj, name: str, tally: Tally) -> None:
    method = getattr(obj, name)

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            tally.cpu[name] += time.process_time() - start

    setattr(obj, name, timed)


def page_row(pdf: Path, record: dict, tally: Tally) -> dict:
    """One page's figures: ``record`` from ``PageDrafter.draft``, the counts from ``tally``."""
    cpu = dict(tally.cpu)
    row = {"file": pdf.name, "kind": kind_of(pdf), "cpu": record["cpu"], "wall": record["wall"],
           "detect_cpu": cpu.get("detect", 0.0), "recognise_cpu": cpu.get("recognise", 0.0),
           "layout_cpu": cpu.get("layout_model", 0.0), "rec_run_cpu": tally.rec_cpu,
           "detected": tally.detected, "lines": tally.lines, "columns": tally.columns,
           "again_columns": tally.again_columns, "lines_again": sum(n - 1 for n in tally.seen.values()),
           "empty_lines": tally.empty_lines, "empty_columns": tally.empty_columns,
           "low_lines": tally.low_lines, "low_columns": tally.low_columns,
           "layout_calls": tally.layout_calls, "digest": record["digest"]}
    row["rest_cpu"] = row["cpu"] - row["detect_cpu"] - row["recognise_cpu"] - row["layout_cpu"]
    return row


def print_row(row: dict) -> None:
    print(f"{row['file']:<18} cpu {row['cpu']:5.2f} det {row['detect_cpu']:4.2f} rec {row['recognise_cpu']:5.2f} "
          f"(runs {row['rec_run_cpu']:5.2f}) lay {row['layout_cpu']:4.2f} rest {row['rest_cpu']:4.2f}  "
          f"lines {row['lines']:4d} of {row['detected']:4d} again {row['lines_again']:3d} cols {row['columns']:6d} "
          f"empty {row['empty_lines']:3d}/{row['empty_columns']:5d} low {row['low_lines']:3d}/{row['low_columns']:5d} "
          f"layout calls {row['layout_calls']}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.drafting_counts", description=__doc__.split("\n")[0])
    parser.add_argument("set", type=Path, help="a scan set (its scan/pairs) or a folder of PDFs")
    parser.add_argument("--limit", type=int, default=0, help="draft only the first N pages")
    parser.add_argument("--every", type=int, default=1, help="draft every Nth page only")
    parser.add_argument("--json", type=Path, default=None, help="write every page's figures here")
    args = parser.parse_args(argv)
    if not args.set.is_dir():
        parser.error("SET must be a folder")
    if args.json is not None and args.json.exists():
        parser.error(f"{args.json} exists; choose another --json")
    pdfs = pdfs_of(args.set)[:: max(1, args.every)][: args.limit or None]
    drafter = PageDrafter(None)
    tally = Tally()
    restore = None
    rows = []
    try:
        for pdf in pdfs:
            if restore is None:
                drafter.draft(pdf)  # loads the models; this page is drafted again below, counted
                restore = instrument(drafter.drafter, tally)
            tally.reset()
            rows.append(page_row(pdf, drafter.draft(pdf), tally))
            print_row(rows[-1])
    finally:
        if restore is not None:
            restore()
    if rows:
        total = {k: sum(r[k] for r in rows) for k in rows[0] if isinstance(rows[0][k], (int, float))}
        cpus = [r["cpu"] for r in rows]
        print(f"\n{len(rows)} pages: CPU median {statistics.median(cpus):.2f} s, p90 {percentile(cpus, 0.9):.2f} s")
        print("CPU shares: " + ", ".join(f"{k[:-4]} {100 * total[k] / total['cpu']:.1f}%"
                                         for k in ("detect_cpu", "recognise_cpu", "layout_cpu", "rest_cpu", "rec_run_cpu")))
        print(f"lines {total['lines']} read of {total['detected']} detected ({total['lines_again']} crops read again), columns {total['columns']}: "
              f"again {total['again_columns']}, empty {total['empty_columns']} ({total['empty_lines']} lines), "
              f"low score {total['low_columns']} ({total['low_lines']} lines); "
              f"recogniser CPU a column {1e3 * total['rec_run_cpu'] / max(1, total['columns']):.3f} ms; "
              f"layout calls {total['layout_calls']}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
