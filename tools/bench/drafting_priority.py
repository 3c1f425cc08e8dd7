"""Seconds a page's drafting takes under each priority of the drafting process, beside busy work.

    python -m tools.bench.drafting_priority scanset/scan/pairs scanset/born/pairs [--busy 1] [--drafter auto]

Two drafting processes (``core.drafters.process``) draft every page of the PDFs given (files, or
folders of them): one under Linux's ``SCHED_IDLE`` (``tuning.DRAFTING_PROCESS_IDLE``), one niced by
``tuning.DRAFTING_PROCESS_NICE``, taking turns at going first page by page, so that whatever else
loads the machine falls on both alike. ``--busy`` processes spin at the normal priority beside
them, started and stopped here (a browser or a build on a user's machine); ``--policies nice``
measures one. Prints each page's
seconds, as the side that asks for the drafts sees them, and per policy the median and p90; both
processes' regions are checked to be the same. Not a test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.drafting_priority")
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--drafter", default="auto")
    parser.add_argument("--busy", type=int, default=1)
    parser.add_argument("--policies", default="idle,nice", help="which of idle, nice (0 to leave one out)")
    args = parser.parse_args(argv)

    from core import tuning
    from core.bench.busy import busy_processes
    from core.documents import open_document
    from core.drafters.process import ProcessDrafter

    pdfs = []
    for name in args.inputs:
        path = Path(name)
        pdfs += sorted(path.glob("*.pdf")) if path.is_dir() else [path]
    policies = [p for p in args.policies.split(",") if p]
    readers = {}
    for policy in policies:  # each process takes its policy when it starts
        tuning.DRAFTING_PROCESS_IDLE = policy == "idle"
        readers[policy] = ProcessDrafter(args.drafter)
        with open_document(pdfs[0]) as document:
            readers[policy].prepare(document.page(0))
    seconds: dict[str, list[float]] = {policy: [] for policy in policies}
    try:
        with busy_processes(args.busy):
            turn = 0
            for pdf in pdfs:
                with open_document(pdf) as document:
                    for index in range(document.page_count):
                        page = document.page(index)
                        order = policies if turn % 2 == 0 else policies[::-1]
                        turn += 1
                        regions, took = {}, {}
                        for policy in order:
                            t0 = time.perf_counter()
                            regions[policy] = readers[policy].draft(page)
                            took[policy] = time.perf_counter() - t0
                            seconds[policy].append(took[policy])
                        same = all(r == regions[order[0]] for r in regions.values())
                        print(f"{pdf.name} p{index + 1}: " + ", ".join(f"{p} {took[p]:.2f} s" for p in policies)
                              + f", same regions: {same}", flush=True)
    finally:
        for reader in readers.values():
            reader.close()
    for policy, values in seconds.items():
        print(f"{policy}: {len(values)} pages, median {statistics.median(values):.2f} s, p90 {p90(values):.2f} s")
    if len(policies) == 2:
        idle, nice = statistics.median(seconds["idle"]), statistics.median(seconds["nice"])
        print(f"median SCHED_IDLE / nice {tuning.DRAFTING_PROCESS_NICE}: {idle / nice:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
