"""Drafting seconds of a multi-page document through the drafting process, in two source trees.

    python -m tools.bench.draft_pipeline DOC.pdf --trees /path/to/before /path/to/after [--rounds 2]

Each tree's code drafts every page of ``DOC.pdf`` as a document run does (``core.draft_ahead.DraftAhead``
with the shared drafting process, ``core.drafters.process``; ``--ahead`` pages beside the decode,
0 for drafter first), taking each page's drafts as soon as they come (a decode that costs nothing:
what is timed is the drafting alone), the document opened as ``hsd convert`` opens it (``--rotate``).
The models are loaded before the clock starts. The trees
take turns, ``--rounds`` times each, so that other work on the machine falls on both alike.
Printed per tree and round: whole-document drafting seconds (from the run's start to the last
page's regions), per page the seconds between one page's regions and the next's (median, p90), the
drafting process's CPU seconds, and the load average; and whether every tree's regions and early
lines are the same. Not a test: the numbers depend on the machine.

    python -m tools.bench.draft_pipeline --make DOC.pdf [--pages 10]

writes a scanned document of generated pages of several kinds (``tools.bench.scan_set``).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = ("article1", "article2", "newspaper", "report", "article3", "form", "gazette", "slide", "formula")

# Run in each tree's own interpreter: only what every tree has (DraftAhead, the process drafter).
CHILD = r"""
import os, pickle, sys, time
from core.documents import open_document
from core.drafters import get_drafter
from core.draft_ahead import DraftAhead
from core.events import RegionsDrafted

path, spec, ahead, out, rotate = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
drafter = get_drafter(spec)

def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

with open_document(path, rotate=rotate) as document:
    events, stamps = [], []
    def emit(event):
        if isinstance(event, RegionsDrafted):
            stamps.append(time.perf_counter())
        events.append(event)
    from core.drafters.process import reader_for
    reader = reader_for(drafter)
    reader.prepare(document.page(0))
    pid = reader._process.pid
    cpu0, start = cpu(pid), time.perf_counter()
    run = DraftAhead(document, list(range(document.page_count)), drafter, 72, ahead=ahead, beside=ahead > 0,
                     emit=emit)
    pages = []
    try:
        for _ in range(document.page_count):
            page = run.next()
            pages.append((page.drafts.result(), [(l.text, l.bbox) for l in page.drafts.early_lines()]))
    finally:
        run.stop()
        run.join()
    end = time.perf_counter()
    result = {"seconds": end - start, "cpu": cpu(pid) - cpu0, "stamps": [s - start for s in stamps],
              "own": [e.seconds for e in events if isinstance(e, RegionsDrafted)], "pages": pages,
              "load": os.getloadavg()[0], "core": __import__("core").__file__}
with open(out, "wb") as f:
    pickle.dump(result, f)
"""


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def make(out: Path, pages: int) -> None:
    import pymupdf

    from tools.bench.scan_set import make_page

    document = pymupdf.open()
    for i in range(pages):
        scan = make_page(KINDS[i % len(KINDS)], i)[1]
        with pymupdf.open("pdf", scan) as page:
            document.insert_pdf(page)
    document.save(out)
    print(f"wrote {pages} scanned pages to {out}")


def run_tree(tree: str, pdf: str, spec: str, ahead: int, rotate: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.pickle")
        env = dict(os.environ, PYTHONPATH=tree)
        subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(pdf), spec, str(ahead), out, rotate], cwd=tree,
                       env=env, check=True, stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            return pickle.load(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.draft_pipeline")
    parser.add_argument("pdf")
    parser.add_argument("--make", action="store_true", help="write a generated scanned document to PDF")
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--trees", nargs="+", default=["."])
    parser.add_argument("--drafter", default="auto")
    parser.add_argument("--ahead", type=int, default=2, help="pages beside the decode (0: drafter first)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rotate", default="auto", help="as --rotate of hsd convert (default auto, its default)")
    args = parser.parse_args(argv)
    if args.make:
        make(Path(args.pdf), args.pages)
        return 0
    results: dict[str, list[dict]] = {tree: [] for tree in args.trees}
    for round_ in range(args.rounds):
        for tree in args.trees:
            got = run_tree(tree, args.pdf, args.drafter, args.ahead, args.rotate)
            results[tree].append(got)
            if not got["core"].startswith(os.path.abspath(tree)):
                raise SystemExit(f"{tree}: its code was not the one run ({got['core']})")
            gaps = [b - a for a, b in zip([0.0] + got["stamps"], got["stamps"])]
            print(json.dumps({"tree": tree, "round": round_, "document_s": round(got["seconds"], 2),
                              "cpu_s": round(got["cpu"], 2), "load": round(got["load"], 2),
                              "page_s_median": round(statistics.median(gaps[1:]), 2),
                              "page_s_p90": round(p90(gaps[1:]), 2), "first_page_s": round(gaps[0], 2),
                              "own_s": [round(s, 2) for s in got["own"]]}), flush=True)
    first = results[args.trees[0]][0]["pages"]
    same = all(r["pages"] == first for runs in results.values() for r in runs)
    print(f"same regions and early lines in every tree and round: {same}")
    for tree, runs in results.items():
        print(f"{tree}: document {statistics.median(r['seconds'] for r in runs):.1f} s, "
              f"CPU {statistics.median(r['cpu'] for r in runs):.1f} s (medians of {len(runs)} rounds)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
