"""Drafting seconds per scan page: wall and CPU, per kind, and where the OCR drafter spends them.

    python -m tools.bench.drafting_seconds SET [--json OUT.json] [--drafter SPEC] [--trees A,B]

``SET`` is a folder of PDFs, or a generated scan set (``python -m tools.bench.scan_set``), whose
``scan/pairs/*.pdf`` are taken. Every page is drafted by the default drafter (``auto``, as
``hsd convert`` drafts a scan: the early lines told to a listener as they are read), its models
loaded before the clock starts and its turn decided before it (``rotate="auto"``, the decode's
business). Each file is its own document, so a CJK page is sampled before it is squeezed.

Per page: wall seconds, CPU seconds (``time.process_time``: every thread of the process, the
figure another program's load moves least) and the OCR pipeline's stages
(``OcrPipeline.stage_seconds``; ``layout`` is the rest: layout model, tables, regions). Reported
per kind (the file name before its last ``_``) and overall: median and 90th percentile of wall and
CPU seconds, each stage's share of the wall seconds. ``--json`` writes every page's figures and a
digest of its drafts (regions, texts, boxes, second readings, early lines), so two runs can be
checked for the same drafts.

``--trees A,B`` drafts with the code of each working tree in turn, page by page, each in its own
process (the clock of both runs shares the machine's load), and reports each tree's figures and
the pages whose drafts differ. Not a test: the seconds depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

STAGES = ("prepare", "detect", "crop", "recognise", "finish", "layout")


def pdfs_of(folder: Path) -> list[Path]:
    """The PDFs to draft: ``folder/scan/pairs/*.pdf`` of a scan set, else ``folder/*.pdf``."""
    pairs = folder / "scan" / "pairs"
    return sorted((pairs if pairs.is_dir() else folder).glob("*.pdf"))


def kind_of(pdf: Path) -> str:
    return pdf.stem.rsplit("_", 1)[0]


def pipeline_of(drafter):
    """The OCR pipeline inside the default drafter, where it has one loaded (None before)."""
    ocr = getattr(drafter, "_ocr", None)
    return getattr(ocr, "_ocr", None)


def drafts_digest(regions, lines) -> str:
    """A digest of what the decode gets from a page: regions and early lines."""
    def plain(value):
        if isinstance(value, float):
            return round(value, 3)
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    items = [plain([r.label, r.bbox, r.text, r.confidence, r.extra]) for r in regions]
    items.append(plain([[ln.text, ln.bbox, ln.readings] for ln in lines]))
    return hashlib.sha1(json.dumps(items, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


class PageDrafter:
    """Drafts one page at a time with the default drafter, as ``hsd convert`` does on a scan."""

    def __init__(self, spec: str | None):
        from core import tuning
        from core.drafters import get_drafter

        self.drafter = get_drafter(spec)
        self.rotate = tuning.DEFAULT_ROTATE

    def draft(self, pdf: Path) -> dict:
        from core.documents import open_document

        with open_document(pdf, rotate=self.rotate) as doc:
            page = doc.page(0)
            page.turn  # decided before the clock: the decode's side turns the page
            self.drafter.prepare(page)
            told: list = []
            cpu, wall = time.process_time(), time.perf_counter()
            regions = self.drafter.draft(page, on_lines=told.extend)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        pipeline = pipeline_of(self.drafter)
        stages = {k: float(v) for k, v in (pipeline.stage_seconds if pipeline is not None else {}).items()}
        stages["layout"] = max(0.0, wall - sum(stages.values()))
        return {"file": pdf.name, "kind": kind_of(pdf), "wall": wall, "cpu": cpu, "stages": stages,
                "regions": len(regions), "early_lines": len(told), "digest": drafts_digest(regions, told),
                "step": getattr(self.drafter, "last_step", None)}


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (linear between the nearest ranks)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    at = share * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def summary(pages: list[dict]) -> dict:
    """Per kind and ``all``: pages, median and p90 of wall and CPU seconds, stage shares of wall."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for page in pages:
        groups[page["kind"]].append(page)
    groups = dict(sorted(groups.items()))
    groups["all"] = list(pages)
    out = {}
    for kind, members in groups.items():
        walls, cpus = [p["wall"] for p in members], [p["cpu"] for p in members]
        total = sum(walls) or 1.0
        out[kind] = {"pages": len(members),
                     "wall_median": statistics.median(walls), "wall_p90": percentile(walls, 0.9),
                     "cpu_median": statistics.median(cpus), "cpu_p90": percentile(cpus, 0.9),
                     "shares": {s: sum(p["stages"].get(s, 0.0) for p in members) / total for s in STAGES}}
    return out


def print_summary(name: str, table: dict) -> None:
    print(f"\n{name}")
    print(f"{'kind':<10} {'pages':>5} {'wall med':>8} {'wall p90':>8} {'cpu med':>8} {'cpu p90':>8}  "
          + " ".join(f"{s[:6]:>6}" for s in STAGES))
    for kind, row in table.items():
        print(f"{kind:<10} {row['pages']:>5} {row['wall_median']:>8.2f} {row['wall_p90']:>8.2f} "
              f"{row['cpu_median']:>8.2f} {row['cpu_p90']:>8.2f}  "
              + " ".join(f"{100 * row['shares'][s]:>5.1f}%" for s in STAGES))


# -- one process per working tree -------------------------------------------------------------
def serve(spec: str | None) -> None:
    """Read PDF paths on stdin, one a line; answer each page's figures as one JSON line."""
    import warnings

    warnings.simplefilter("ignore")
    drafter = PageDrafter(spec)
    for line in sys.stdin:
        print(json.dumps(drafter.draft(Path(line.strip()))), flush=True)


class TreeProcess:
    def __init__(self, tree: Path, spec: str | None):
        env = dict(os.environ, PYTHONPATH=str(tree))
        command = [sys.executable, str(Path(__file__).resolve()), "--serve"] + (["--drafter", spec] if spec else [])
        self.tree = tree
        self.process = subprocess.Popen(command, cwd=tree, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def draft(self, pdf: Path) -> dict:
        self.process.stdin.write(f"{pdf.resolve()}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"the drafter of {self.tree} stopped at {pdf.name}")
        return json.loads(answer)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.drafting_seconds", description=__doc__.split("\n")[0])
    parser.add_argument("set", nargs="?", type=Path, help="a scan set (its scan/pairs) or a folder of PDFs")
    parser.add_argument("--drafter", default=None, help="drafter spec (default: the default drafter)")
    parser.add_argument("--json", type=Path, default=None, help="write every page's figures here")
    parser.add_argument("--trees", default=None, help="comma-separated working trees to draft with, page by page")
    parser.add_argument("--limit", type=int, default=0, help="draft only the first N pages")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.drafter)
        return 0
    if args.set is None or not args.set.is_dir():
        parser.error("SET must be a folder")
    pdfs = pdfs_of(args.set)[: args.limit or None]
    if not pdfs:
        parser.error(f"no PDFs in {args.set}")
    if args.json is not None and args.json.exists():
        parser.error(f"{args.json} exists; choose another --json")
    trees = [Path(t).resolve() for t in args.trees.split(",")] if args.trees else [None]
    runners = [TreeProcess(t, args.drafter) if t is not None else PageDrafter(args.drafter) for t in trees]
    pages: dict[str, list[dict]] = {str(t or "here"): [] for t in trees}
    try:
        for n, pdf in enumerate(pdfs):
            # alternate which tree goes first, so neither always drafts right after the other
            for k in range(len(runners)):
                i = (k + n) % len(runners)
                record = runners[i].draft(pdf)
                pages[str(trees[i] or "here")].append(record)
                print(f"{pdf.name:<20} {str(trees[i] or 'here')[-20:]:>20} wall {record['wall']:6.2f} s "
                      f"cpu {record['cpu']:6.2f} s  {record['digest']}", file=sys.stderr, flush=True)
    finally:
        for runner in runners:
            if isinstance(runner, TreeProcess):
                runner.close()
    report = {"set": str(args.set), "cpus": os.cpu_count(), "load": os.getloadavg(), "runs": {}}
    for name, records in pages.items():
        table = summary(records)
        print_summary(name, table)
        report["runs"][name] = {"summary": table, "pages": records}
    if len(pages) > 1:
        first, *others = list(pages.values())
        for name, records in list(pages.items())[1:]:
            differ = [a["file"] for a, b in zip(first, records) if a["digest"] != b["digest"]]
            print(f"\ndrafts differing from {list(pages)[0]} in {name}: {len(differ)} of {len(records)} "
                  + (", ".join(differ) if differ else ""))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
