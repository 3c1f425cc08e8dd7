"""Drafting timelines: a scan's drafting recorded once, replayed on a virtual clock.

The simulated GPU (``core.bench.simulated_gpu``) sleeps its passes while the drafter really runs
beside the decode, so a run's seconds are what a user's clock would read, and differ from run to
run with the machine's state (a few per cent; a stalled page more). Deciding a scheduling or
drafting default on many pages that way takes minutes a corpus and the noise hides steps of a few
per cent. A timeline separates the two:

* ``record``: each page drafted once, alone, the early OCR lines stamped with the seconds into the
  drafting at which the recogniser told them (``core.drafters.line_stream``), and the regions with
  the drafting's whole time.
* ``replay``: each page decoded against the simulated GPU's cost model on a virtual clock (the
  passes' simulated seconds, nothing slept, plus the decode thread's own CPU time times
  ``cpu_factor``); the lines and the regions reach the decode when the clock passes their
  recorded times (times ``draft_factor``), and a page whose decode ends first is done then, as in
  a document run (``core.run``: its regions come after its ``PageDone``). Same pages, same drafts, same arrival times for every setting
  compared: a 64-page comparison takes seconds and repeats to within about a per cent (the engine's
  CPU time is measured, not modelled).

What it leaves out: the drafting's slowdown beside a decode (``draft_factor``; 1.1 measured on two
cores), rendering, and waits for the CPU. Its figures are for comparing settings; end-to-end
figures come from ``hsd bench --target simulated-gpu``.

    python -m tools.bench.timeline record CORPUS --out timeline.jsonl [--docs a,b]
    python -m tools.bench.timeline replay CORPUS timeline.jsonl [--mode hsd] [--cpu-factor 1.6] [--reading-order]
        [--stack 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from core import tuning
from core.bench.corpus import load_corpus, prepare_reference, region_references, region_spans
from core.bench.document_run import line_references
from core.bench.replay import ReplayTokenizer, base_tokenizer
from core.bench.simulated_gpu import GpuCostModel, SimulatedGpuTarget
from core.documents import open_document
from core.drafters.base import OcrLine, Region, draft_page, stack_lines
from core.drafters.layout import line_reading_order


@dataclass
class PageTimeline:
    """One page's drafting: ``chunks`` of early lines with the seconds they came at, the regions,
    and the drafting's whole seconds (when the regions came)."""

    name: str
    seconds: float
    chunks: list[tuple[float, list[OcrLine]]]
    regions: list[Region]

    def to_dict(self) -> dict:
        return {"name": self.name, "seconds": round(self.seconds, 4), "regions": [r.to_dict() for r in self.regions],
                "chunks": [[round(t, 4), [[ln.text, list(ln.bbox) if ln.bbox else None, ln.readings] for ln in lines]]
                           for t, lines in self.chunks]}

    @classmethod
    def from_dict(cls, d: dict) -> "PageTimeline":
        chunks = [(t, [OcrLine(line[0], tuple(line[1]) if line[1] else None, line[2] if len(line) > 2 else None)
                       for line in lines]) for t, lines in d["chunks"]]
        return cls(d["name"], d["seconds"], chunks, [Region.from_dict(r) for r in d["regions"]])


def record(corpus, drafter, names: list[str] | None = None) -> list[PageTimeline]:
    """Each single-page document of ``corpus`` drafted once by ``drafter`` (in this process), its
    lines stamped, one by one: ``replay`` stacks them as the drafter would (``stacked``)."""
    saved, tuning.EARLY_LINES_STACK = tuning.EARLY_LINES_STACK, 1
    try:
        return _record(corpus, drafter, names)
    finally:
        tuning.EARLY_LINES_STACK = saved


def _record(corpus, drafter, names: list[str] | None) -> list[PageTimeline]:
    out = []
    for doc in load_corpus(corpus, names):
        with open_document(doc.pdf) as pdf:
            page = pdf.page(0)
            drafter.prepare(page)  # its models load outside the page's drafting time
            chunks: list[tuple[float, list[OcrLine]]] = []
            t0 = time.perf_counter()
            def told(lines, chunks=chunks, t0=t0):
                chunks.append((time.perf_counter() - t0, list(lines)))

            regions = list(draft_page(drafter, page, told))
            out.append(PageTimeline(doc.name, time.perf_counter() - t0, chunks, regions))
    return out


class VirtualClock:
    """Simulated GPU seconds plus the decode thread's CPU seconds times ``cpu_factor``."""

    def __init__(self, cpu_factor: float):
        self.cpu_factor = cpu_factor
        self.device = 0.0
        self._cpu0 = time.thread_time()

    def __call__(self) -> float:
        return self.device + (time.thread_time() - self._cpu0) * self.cpu_factor


class _VirtualDevice:
    """The simulated GPU's device clock, advancing the virtual clock instead of sleeping."""

    def __init__(self, clock: VirtualClock):
        self.clock, self.seconds = clock, 0.0

    def spend(self, seconds: float, computing: float = 0.0) -> None:
        """A pass of ``seconds``: the virtual clock has counted the ``computing`` seconds of finding
        its answer as the thread's CPU (times ``cpu_factor``), so only the rest is added."""
        self.seconds += seconds
        self.clock.device += max(0.0, seconds - computing * self.clock.cpu_factor)


class TimedDrafting:
    """A page's drafting as the decode sees it (``core.page_job.Drafting``), from its timeline:
    lines and regions appear when the virtual clock passes their recorded times."""

    error = None

    def __init__(self, page: PageTimeline, clock: VirtualClock, draft_factor: float):
        self.page, self.clock, self.factor = page, clock, draft_factor
        self.seconds = page.seconds * draft_factor
        self._start = clock()

    def _now(self) -> float:
        return (self.clock() - self._start) / self.factor if self.factor else float("inf")

    def early_lines(self) -> list[OcrLine]:
        now = self._now()
        return [line for t, lines in self.page.chunks if t <= now for line in lines]

    def done(self) -> bool:
        return self._now() >= self.page.seconds

    def result(self) -> list[Region]:
        wait = self.seconds - (self.clock() - self._start)
        if wait > 0:  # the page is saved once its regions have come (the overlay, the figures)
            self.clock.device += wait
        return self.page.regions


@dataclass
class ReplayedPage:
    name: str
    passes: int
    seconds: float
    lines_read: int
    passes_before_regions: int


def in_reading_order(page: PageTimeline) -> PageTimeline:
    """``page`` with its lines told in reading order (``layout.line_reading_order`` on their boxes,
    as ``core.drafters.line_stream`` reads them) at the same times and in chunks of the same sizes:
    two orders compared on one recording, without the drafting's run-to-run differences."""
    lines = [line for _, chunk in page.chunks for line in chunk]
    if not lines or any(line.bbox is None for line in lines):
        return page
    order = iter(line_reading_order([tuple(line.bbox) for line in lines]))
    chunks = [(t, [lines[next(order)] for _ in chunk]) for t, chunk in page.chunks]
    return PageTimeline(page.name, page.seconds, chunks, page.regions)


def stacked(page: PageTimeline, most: int | None = None) -> PageTimeline:
    """``page`` (recorded line by line) with each chunk's lines told in stacks of at most ``most``
    (``stack_lines`` as the drafter forms them; default ``tuning.EARLY_LINES_STACK``), at the same
    times: stack sizes compared on one recording."""
    chunks = [(t, stack_lines(chunk, most)) for t, chunk in page.chunks]
    return PageTimeline(page.name, page.seconds, chunks, page.regions)


def replay(corpus, timelines: list[PageTimeline], mode: str = "hsd", cost: GpuCostModel | None = None,
           cpu_factor: float = 1.6, draft_factor: float = 1.1, tokenizer: str = "qwen") -> list[ReplayedPage]:
    """Each page of ``timelines`` decoded by ``mode`` on the virtual clock (module docstring);
    ``corpus``: where the pages' references are."""
    from core.engine import Engine, EngineConfig  # the engine imports the targets: not at import time
    from core.page_pipeline import DraftedPage

    docs = {d.name: d for d in load_corpus(corpus, [t.name for t in timelines])}
    tok = ReplayTokenizer(base_tokenizer(tokenizer))
    out = []
    for page in timelines:
        doc = docs[page.name]
        reference = prepare_reference(doc.reference)
        lines = [line for _, chunk in page.chunks for line in chunk]
        clock = VirtualClock(cpu_factor)
        target = SimulatedGpuTarget(tok, cost or GpuCostModel())
        target.device_clock, target.clock = _VirtualDevice(clock), clock
        spans = region_spans(reference, page.regions)
        target.set_page(reference, region_references(reference, page.regions, spans), line_references(reference, lines))
        with open_document(doc.pdf) as pdf:
            p = pdf.page(0)
            image, width, height = p.render(tuning.DPI), p.width, p.height
        drafting = TimedDrafting(page, clock, draft_factor) if mode != "ar" else []
        t0 = clock()
        decoded = Engine(EngineConfig(mode=mode), target=target).decode_image(
            DraftedPage(1, width, height, image, drafting))
        seconds = clock() - t0  # the page is done when its decode ends (its drafts may come later)
        s = decoded.finish().stats
        out.append(ReplayedPage(page.name, s.forward_passes, seconds, s.lines_read, s.passes_before_drafts))
    return out


def save(timelines: list[PageTimeline], path) -> None:
    Path(path).write_text("".join(json.dumps(t.to_dict(), ensure_ascii=False) + "\n" for t in timelines), encoding="utf-8")


def load(path) -> list[PageTimeline]:
    return [PageTimeline.from_dict(json.loads(line)) for line in Path(path).read_text(encoding="utf-8").splitlines() if line]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.timeline", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="draft each page once, its lines stamped")
    rec.add_argument("corpus")
    rec.add_argument("--out", required=True)
    rec.add_argument("--docs", default="")
    rec.add_argument("--drafter", default="auto")
    rep = sub.add_parser("replay", help="decode each page on the virtual clock")
    rep.add_argument("corpus")
    rep.add_argument("timeline")
    rep.add_argument("--docs", default="")
    rep.add_argument("--mode", default="hsd")
    rep.add_argument("--cpu-factor", type=float, default=1.6)
    rep.add_argument("--draft-factor", type=float, default=1.1)
    rep.add_argument("--tokenizer", default="qwen")
    rep.add_argument("--stack", type=int, default=None,
                     help="early lines a stack at most (default: tuning.EARLY_LINES_STACK; 1: one a record)")
    rep.add_argument("--reading-order", action="store_true",
                     help="tell each page's lines in reading order at the recorded times (in_reading_order)")
    args = ap.parse_args(argv)
    names = [n for n in args.docs.split(",") if n] or None
    if args.command == "record":
        from core.bench.runner import make_drafter
        drafter, _ = make_drafter(args.drafter)
        timelines = record(args.corpus, drafter, names)
        save(timelines, args.out)
        print(f"{len(timelines)} pages, {sum(t.seconds for t in timelines):.1f} s of drafting -> {args.out}")
        return 0
    timelines = [t for t in load(args.timeline) if not names or any(t.name.startswith(n) for n in names)]
    if args.reading_order:
        timelines = [in_reading_order(t) for t in timelines]
    timelines = [stacked(t, args.stack) for t in timelines]
    pages = replay(args.corpus, timelines, args.mode, cpu_factor=args.cpu_factor, draft_factor=args.draft_factor,
                   tokenizer=args.tokenizer)
    for p in pages:
        print(f"{p.name}\t{p.passes}\t{p.seconds:.2f}\t{p.lines_read}\t{p.passes_before_regions}")
    print(f"{args.mode}: {len(pages)} pages, {sum(p.passes for p in pages)} passes, "
          f"{sum(p.seconds for p in pages):.2f} virtual seconds, {sum(p.lines_read for p in pages)} lines read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
