"""One page being decoded: the context every stage of the engine reads and writes (``PageJob``).

A ``PageJob`` is built from named parts: the rendered page (``PageImage``), its regions as the
drafter delivers them (``PageRegions``: one ``PageRegion`` record each, and the early OCR lines),
the document's memory (``DocumentMemory``: learned notation and earlier output) and the run's hooks
(events, cancel). It gives what every stage shares: timing, the cancel check, stop rules, a decoder
and the page row's text as events. Stage 1's rows, crops and drafts are ``core.stage1``'s; the
schedules are ``core.stage1`` (hsd, regions), ``core.stages`` (ar, page) and ``core.elements``
(element-level families), which ``core.engine.schedule`` picks.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from core import tuning
from core.drafters.background import exact_text
from core.drafters.base import Region, as_ocr_lines
from core.drafters.normalize import clean_draft_text
from core.errors import CancelledError
from core.events import TextAppended
from core.results import FIGURE_LABELS, PageStats, RegionStats, TextSpan, page_seconds
from core.speculative.budget import PassCost
from core.speculative.decode import DecodeRow, SpeculativeDecoder
from core.speculative.detokenize import IncrementalDetokenizer
from core.speculative.history import OutputHistory
from core.speculative.mathmode import inside_math
from core.speculative.notation import Notation
from core.speculative.stopping import StopRule
from core.targets.protocol import PageTarget, clock_of

EventCallback = Callable[[object], None]


@contextmanager
def timed(seconds: dict, key: str, device=None, clock: Callable[[], float] = time.perf_counter):
    """Add the wall-clock seconds of the block to ``seconds[key]``, the GPU synchronised first and
    last so that queued work is counted (``clock``: a simulation's own clock instead)."""
    _sync(device)
    t0 = clock()
    try:
        yield
    finally:
        _sync(device)
        seconds[key] = seconds.get(key, 0.0) + clock() - t0


def _sync(device) -> None:
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


class Drafting(Protocol):
    """A page's drafting as the decode sees it: done now or later (``core.drafters.background.DraftJob``,
    ``core.page_pipeline.PendingDrafts``). ``error`` and ``seconds``: as the drafter left them;
    ``early_lines``: the lines it has read so far (``OcrLine``, or plain texts; it may offer none)."""

    error: str | None
    seconds: float

    def done(self) -> bool: ...

    def early_lines(self) -> list: ...

    def result(self) -> list[Region]: ...


@dataclass(frozen=True)
class PageImage:
    """The rendered page: ``image`` (PIL, any resolution), ``scale`` pixels per point, ``number`` 1-based."""

    image: object
    scale: float
    number: int


@dataclass
class DocumentMemory:
    """What pages of one document (``key``) teach the next: the learned notation (how the model
    wrote the drafts' words and numbers) and the earlier pages' output, a draft for later pages."""

    key: object
    notation: Notation
    history: OutputHistory

    @classmethod
    def new(cls, key, max_ngram: int) -> "DocumentMemory":
        return cls(key, Notation(), OutputHistory(max_ngram))


@dataclass
class PageRegion:
    """One drafter region as the stages see it: the region, its statistics, its draft in target
    tokens and as cleaned text, where the draft came from, and Stage 1's reading of its crop."""

    region: Region
    stats: RegionStats
    tokens: list[int]             # the draft in target tokens ([] for figures and empty text)
    text: str                     # the cleaned draft ("" where ``tokens`` is [])
    exact: bool                   # the draft is the document's own text, not a reading of pixels
    figure_text: str = ""         # text read inside a figure region ("" elsewhere)
    output: str = ""              # Stage 1's reading ("" until read)
    second_text: str = ""         # another reading of the region (OCR beside a doubtful text layer)

    @property
    def is_figure(self) -> bool:
        return self.region.label in FIGURE_LABELS

    @classmethod
    def drafted(cls, region: Region, encode: Callable[[str], list[int]]) -> "PageRegion":
        figure = region.label in FIGURE_LABELS
        text = "" if figure else clean_draft_text(region.text)
        tokens = encode(text) if text else []
        return cls(region, RegionStats(label=region.label, bbox=tuple(region.bbox), verified=False,
                                       drafted_tokens=len(tokens)),
                   tokens, text if tokens else "", exact_text(region),
                   figure_text=clean_draft_text(region.text) if figure and region.text else "",
                   second_text=clean_draft_text(region.extra.get("second_draft", "")))


#: The source of an early OCR line's record (a line read before the page's regions came).
LINE_SOURCE = "ocr-line"


class PageRegions:
    """A page's regions (``PageRegion`` records, in reading order), empty until the drafting
    delivers; ``poll`` takes them in (once), so every stage sees them. ``arrived_after``: the
    decoding passes the page had run when they arrived (0: before its first pass). Until then,
    ``take_lines`` takes in the lines the drafter has read so far (``lines_after``: the passes run
    when the first came; None: none came): ``line_texts`` all of them, ``lines`` a record of each
    one with a box to crop (``OcrLine.croppable``), which Stage 1 can read on its crop
    (``core.stage1.item``: tag ``-1 - k``)."""

    def __init__(self, drafting: Drafting, encode: Callable[[str], list[int]]):
        self.drafting, self.encode = drafting, encode
        self.ready = False
        self.arrived_after = 0
        self.lines_after: int | None = None
        self._lines_seen = 0
        self.line_texts: list[str] = []
        self.lines: list[PageRegion] = []
        self.items: list[PageRegion] = []

    def poll(self, passes: int) -> bool:
        """Take the drafter's regions if it has finished; True only on the call that takes them.
        ``passes``: decoding passes the page has run so far."""
        if self.ready or not self.drafting.done():
            return False
        self._install(self.drafting.result(), passes)
        return True

    def take_lines(self, passes: int) -> list[int] | None:
        """Take in the lines the drafter has read since the last call, while its regions have not
        come; returns the tags of the new lines' records (those with a box), None where no line
        came. ``passes``: decoding passes run so far (``lines_after``)."""
        if self.ready:
            return None
        lines = self.drafting.early_lines()
        count = len(lines)  # the drafting thread appends while this reads
        if count <= self._lines_seen:
            return None
        if self.lines_after is None:
            self.lines_after = passes
        tags = []
        for line in as_ocr_lines(lines[self._lines_seen:count]):
            self.line_texts.append(line.text)
            if line.croppable:
                extra = {"second_readings": line.readings} if line.readings else {}
                self.lines.append(PageRegion.drafted(Region("text", tuple(line.bbox), line.text, LINE_SOURCE,
                                                            extra=extra), self.encode))
                tags.append(-len(self.lines))
        self._lines_seen = count
        return tags

    def early_text(self, passes: int) -> str | None:
        """The lines the drafter has read so far, one a line, where more have come since the last
        call and the regions have not (None otherwise). ``passes``: decoding passes run so far."""
        if self.take_lines(passes) is None:
            return None
        return clean_draft_text("\n".join(self.line_texts))

    def wait(self, passes: int) -> None:
        """Wait for the drafter (the regions decide what is read, and figures and the overlay need them)."""
        if not self.ready:
            self._install(self.drafting.result(), passes)

    def forget_lines(self) -> None:
        """Forget the lines taken in: the next ``take_lines`` takes every line read so far again
        (a page that starts over, ``core.stage1.reset``)."""
        self._lines_seen = 0
        self.line_texts, self.lines = [], []

    def _install(self, regions: list[Region], passes: int) -> None:
        self.ready, self.arrived_after = True, passes
        self.items = [PageRegion.drafted(r, self.encode) for r in regions]

    # -- what a page result keeps -----------------------------------------------------------------

    @property
    def regions(self) -> list[Region]:
        return [item.region for item in self.items]

    @property
    def stats(self) -> list[RegionStats]:
        return [item.stats for item in self.items]

    @property
    def outputs(self) -> list[str]:
        return [item.output for item in self.items]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> PageRegion:
        return self.items[index]

    def __iter__(self):
        return iter(self.items)


@dataclass
class PageDecode:
    """What a stage returns: the target's output ids, the text they decode to (the family's own
    format, before it becomes Markdown) and which region each stretch of that text came from."""

    tokens: list[int]
    text: str
    spans: list[TextSpan]


class TextStream:
    """The page row's new text as ``TextAppended`` events while it decodes: the first text at once,
    then at most one event every ``tuning.TEXT_EVENT_SECONDS``, and the rest when the decode ends
    (``flush``). A pass on a GPU takes a few milliseconds: an event each would wake whoever reads
    the events (the app's GUI thread, which then lays out the page's text) hundreds of times a
    second, on the interpreter lock the decode needs between its passes."""

    def __init__(self, job: "PageJob"):
        self.job = job
        self.detok = IncrementalDetokenizer(job.target.decode)
        self._due = 0.0  # monotonic time from which the next event may go

    def push(self, row: DecodeRow) -> None:
        """After a pass: the text the row gained since the last event, if one is due."""
        now = time.monotonic()
        if now >= self._due and self._emit(row):
            self._due = now + tuning.TEXT_EVENT_SECONDS

    def flush(self, row: DecodeRow) -> None:
        """After the decode: whatever text has not gone out yet."""
        self._emit(row)

    def _emit(self, row: DecodeRow) -> bool:
        text = self.detok.push(row.output)
        if text:
            self.job.emit(TextAppended(page=self.job.number, text=text))
        return bool(text)


class PageJob:
    """Everything one page's decode shares: ``config`` (an ``EngineConfig``), the ``target``, the
    rendered ``page``, its ``regions``, ``stats`` and ``seconds``; the document's ``memory`` (None:
    the page learns alone); ``pass_cost`` (None: proposals are not priced); ``emit`` (progress
    events) and ``should_cancel`` (checked between passes)."""

    def __init__(self, config, target: PageTarget, page: PageImage, regions: PageRegions, *,
                 memory: DocumentMemory | None = None, pass_cost: PassCost | None = None,
                 emit: EventCallback | None = None, should_cancel: Callable[[], bool] | None = None,
                 seconds: dict | None = None):
        self.config, self.target = config, target
        self.page, self.regions = page, regions
        self.memory, self.pass_cost = memory, pass_cost
        self.emit = emit or (lambda event: None)
        self.should_cancel = should_cancel
        self.stats = PageStats(mode=config.mode)
        self.seconds = seconds if seconds is not None else page_seconds()

    @property
    def number(self) -> int:
        return self.page.number

    @property
    def history(self) -> OutputHistory | None:
        return self.memory.history if self.memory is not None else None

    # -- shared pieces --------------------------------------------------------------------------

    def timed(self, key: str):
        return timed(self.seconds, key, self.target.device, clock_of(self.target))

    def check_cancel(self) -> None:
        if self.should_cancel and self.should_cancel():
            raise CancelledError("cancelled")

    def notation(self) -> Notation:
        """The document's learned notation, or (no document) a new one for this page's rows."""
        return self.memory.notation if self.memory is not None else Notation()

    def stop(self, max_new_tokens: int) -> StopRule:
        return StopRule(self.target.eos_token_ids, max_new_tokens, self.config.repetition)

    def decoder(self) -> SpeculativeDecoder:
        cfg, target = self.config, self.target
        relax = None
        if cfg.tau < 1.0:
            relax = lambda toks: not inside_math(target.decode(toks))  # noqa: E731
        return SpeculativeDecoder(target, cfg.proposal, tau=cfg.tau, relax_allowed=relax,
                                  should_cancel=self.should_cancel, cost=self.pass_cost)


def joined_regions(outputs: list[str]) -> tuple[str, list[TextSpan]]:
    """A page read region by region: the region outputs in reading order, a blank line between
    (the regions baseline, and element-level families); spans say which region wrote what."""
    parts, spans, pos = [], [], 0
    for i, text in enumerate(outputs):
        if not text.strip():
            continue
        if parts:
            pos += 2
        spans.append(TextSpan(region=i, start=pos, end=pos + len(text)))
        parts.append(text)
        pos += len(text)
    return "\n\n".join(parts), spans


def empty_cache(device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()

