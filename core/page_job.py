"""One page being decoded: the context every stage of the engine reads and writes (``PageJob``).

A ``PageJob`` is built from named parts: the rendered page (``PageImage``), its regions as the
drafter delivers them (``PageRegions``: one ``PageRegion`` record each), the document's memory
(``DocumentMemory``: learned notation and earlier output) and the run's hooks (events, cancel). It
builds what the stages share: stop rules, decoders, the crops' prefills and the region rows of
Stage 1. The stages themselves (``core.stages``, ``core.elements``) only schedule rows.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from core.drafters.background import exact_text
from core.drafters.base import Region, as_ocr_lines
from core.drafters.layout import join_lines, smallest_holder
from core.drafters.normalize import clean_draft_text
from core.errors import CancelledError
from core.events import RegionVerified
from core.results import FIGURE_LABELS, PageStats, RegionStats, TextSpan, page_seconds
from core.speculative.budget import PassCost
from core.speculative.decode import DecodeRow, SpeculativeDecoder
from core.speculative.history import OutputHistory
from core.speculative.mathmode import inside_math
from core.speculative.page_drafts import PageDrafts
from core.speculative.proposers import Proposer
from core.speculative.stopping import StopRule
from core.speculative.notation import Notation
from core.targets.base import BatchPrefill, PrefillRequest
from core.targets.profiles import style_of
from core.targets.protocol import PageTarget, clock_of
from core.tuning import REGION_TOKENS_PER_DRAFT_TOKEN, REGION_TOKENS_SLACK, UNDRAFTED_REGION_TOKENS

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
    (``PageJob.item``: tag ``-1 - k``)."""

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
        lines = getattr(self.drafting, "early_lines", None)
        if self.ready or lines is None:
            return None
        lines = lines()
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

    def reset_stage1(self) -> None:
        """Forget what Stage 1 found (an attempt abandoned for memory must not leave its results);
        the next attempt's page row is handed the lines read so far again."""
        self._lines_seen = 0
        self.line_texts, self.lines = [], []
        for item in self.items:
            rs = item.stats
            rs.verified, rs.fallback, rs.accepted_tokens, rs.forward_passes, rs.output_tokens = (
                False, False, 0, 0, 0)
            item.output = ""

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

    def page_drafts(self, notation: Notation) -> PageDrafts:
        """Stage 2's drafts: every region's, refined as Stage 1 reads them. The page's OCR second
        readings (``core.drafters.second_readings``) become the notation's, for every row."""
        items, target = self.regions.items, self.target
        notation.second_readings = second_readings(items)
        return PageDrafts([r.tokens for r in items], [r.text for r in items], target.encode, target.decode,
                          self.config.proposal, notation=notation, history=self.history, style=style_of(target),
                          figure_texts=[r.figure_text for r in items], second_texts=[r.second_text for r in items])

    def early_drafts(self, passes: int, notation: Notation) -> Proposer | None:
        """Stage 2's proposals from the lines the drafter has read before its regions, where more
        came since the last call (``PageRegions.early_text``; None otherwise): one draft of no
        region (nothing is credited to a region). ``passes``: decoding passes run so far."""
        if self.regions.early_text(passes) is None:
            return None
        return self.text_drafts(notation)

    def text_drafts(self, notation: Notation) -> Proposer | None:
        """Proposals from the texts of the lines taken in so far (``PageRegions.line_texts``) as
        one draft of no region (None where they hold no text)."""
        text = clean_draft_text("\n".join(self.regions.line_texts))
        if not text:
            return None
        target = self.target
        return PageDrafts([target.encode(text)], [text], target.encode, target.decode, self.config.proposal,
                          regions=[None], notation=notation, history=self.history,
                          style=style_of(target)).proposer

    def line_drafts(self, notation: Notation, read: dict[int, list[int]]) -> PageDrafts:
        """Stage 2's drafts while only the early OCR lines are there (``PageRegions.lines``): each
        line's text, and its Stage 1 reading where one is done (``read``: line tag -> tokens).
        Lines belong to no region: what is accepted from them is credited to none."""
        lines, target = self.regions.lines, self.target
        notation.second_readings = second_readings(lines)
        tags = [-1 - k for k in range(len(lines))]
        drafts = PageDrafts([r.tokens for r in lines], [r.text for r in lines], target.encode, target.decode,
                            self.config.proposal, regions=[None] * len(lines), notation=notation,
                            history=self.history, style=style_of(target), keys=tags)
        for tag, tokens in read.items():
            drafts.refine(tag, tokens, self.item(tag).output)
        drafts.rejoin()
        return drafts

    def item(self, tag: int) -> PageRegion:
        """What a Stage 1 row reads: region ``tag``, or for a negative tag the early OCR line
        ``-1 - tag`` (``PageRegions.lines``)."""
        return self.regions[tag] if tag >= 0 else self.regions.lines[-1 - tag]

    def region_proposer(self, index: int, notation: Notation | None) -> Proposer:
        """The proposals of one region's row on its crop: the same strategies as the page's (token
        n-grams, then normalised text, where rapid-table's HTML and the model's differ in spacing;
        then the output's own n-grams, as table markup repeats), from the region's draft alone
        (``index``: a Stage 1 tag, ``item``)."""
        item, target = self.item(index), self.target
        return PageDrafts([item.tokens], [item.text], target.encode, target.decode, self.config.proposal,
                          regions=[index if index >= 0 else None], notation=notation,
                          history=self.history, second_texts=[item.second_text]).proposer

    def read_by_lines(self, read: dict[int, list[int]]) -> dict[int, list[int]]:
        """Regions whose every early OCR line Stage 1 has read (``read``: line tag -> tokens), each
        with its reading: its lines' readings joined as the drafter joins a paragraph's lines. A
        line belongs to the smallest region holding its centre. Only plain text is read this way:
        a table's, a formula's or a listing's markup is more than its lines say, and is read on
        its own crop. A record of several lines (``core.drafters.base.stack_lines``) counts as one.
        The regions are recorded as verified, line by line."""
        lines, target = self.regions.lines, self.target
        boxes = [item.region.bbox for item in self.regions]
        members: dict[int, list[int]] = {}
        for k, line in enumerate(lines):
            region = smallest_holder(line.region.bbox, boxes)
            if region is not None:
                members.setdefault(region, []).append(-1 - k)
        out = {}
        for region, tags in members.items():
            item = self.regions[region]
            if item.region.label not in LINE_READ_LABELS or not item.tokens or any(t not in read for t in tags):
                continue
            text = join_lines([self.item(t).output for t in tags])
            if not text:
                continue
            tokens = target.encode(text)
            item.output = text
            rs = item.stats
            rs.verified, rs.output_tokens = True, len(tokens)
            rs.accepted_tokens = sum(self.item(t).stats.accepted_tokens for t in tags)
            rs.forward_passes = max(self.item(t).stats.forward_passes for t in tags)
            self.emit(RegionVerified(page=self.number, region=region, stats=rs, text=text))
            out[region] = tokens
        self.stats.regions_read_by_lines += len(out)
        return out

    # -- Stage 1 rows ---------------------------------------------------------------------------

    def stage1_todo(self) -> list[int]:
        """Regions Stage 1 reads: every text region (hsd may skip some drafters' regions, and skips
        Stage 1 altogether on a short page whose drafts are all exact text: ``stage1_min_tokens``).
        A region the drafter found but could not read (a formula image, an empty OCR line) is
        decoded from its crop without a draft: beside the page row that costs no passes of its own."""
        cfg, items = self.config, self.regions.items
        skip = () if cfg.mode == "regions" else cfg.stage1_skip_sources
        todo = [i for i, r in enumerate(items) if not r.is_figure and r.region.source not in skip]
        if cfg.mode == "hsd" and sum(len(r.tokens) for r in items) < cfg.stage1_min_tokens and all(
                items[i].exact for i in todo if items[i].tokens):
            return []  # a short born-digital page: Stage 2 reads its exact drafts in a few passes
        return todo

    def prefill_regions(self, chunk: list[int]) -> BatchPrefill:
        """The crops of regions ``chunk``, prefilled together (one forward pass where the family can)."""
        self.check_cancel()
        cfg, page = self.config, self.page
        requests = [PrefillRequest(_crop(page.image, self.item(i).region.bbox, page.scale, cfg.region_pad_pt),
                                   kind="region", label=self.item(i).region.label, region=i) for i in chunk]
        before = self.seconds.get("prefill", 0.0)
        with self.timed("prefill"):
            bp = self.target.prefill_batch(requests)
        if self.pass_cost is not None:
            self.pass_cost.add_crops(len(chunk), self.seconds["prefill"] - before)
        return bp

    def region_rows(self, chunk: list[int], bp: BatchPrefill, notation: Notation | None = None) -> list[DecodeRow]:
        """Stage 1 rows of regions ``chunk`` (``notation`` None: each row learns its own)."""
        cfg = self.config
        # In hsd mode Stage 1 only refines drafts: a region whose draft the target keeps rejecting
        # is abandoned (its raw draft still serves Stage 2). The regions baseline decodes in full.
        give_up = cfg.stage1_give_up if cfg.mode == "hsd" else 0.0
        return [DecodeRow(proposer=self.region_proposer(i, notation),
                          stop=self.stop(min(cfg.max_new_tokens, _region_bound(self.item(i).tokens))),
                          length=bp.lengths[k], rope_delta=bp.rope_deltas[k],
                          root=int(bp.logits[k].argmax()), tag=i, give_up_below=give_up)
                for k, i in enumerate(chunk)]

    def region_done(self, row: DecodeRow) -> list[int] | None:
        """Record a finished Stage 1 row; returns the region's refined tokens (None: not verified)."""
        if row.stop_reason == "superseded":
            return None  # the page finished first (or a line's region came): its output is not needed
        item = self.item(row.tag)
        rs = item.stats
        rs.verified = True
        rs.accepted_tokens, rs.forward_passes = row.stats.accepted, row.stats.forward_passes
        out = row.output  # "low_acceptance": a partial refinement; Stage 2 also sees the raw draft
        if row.stop_reason == "repetition" and item.region.label != "table":
            out, rs.fallback = list(item.tokens), True
        rs.output_tokens = len(out)
        if row.tag < 0:
            self.stats.lines_read += 1
        else:  # an early line is no region of the page's: no event names it
            self.emit(RegionVerified(page=self.number, region=row.tag, stats=rs, text=self.target.decode(out)))
        return out


def second_readings(items: list[PageRegion]) -> dict[str, list]:
    """The OCR's second readings of the words of ``items`` (``core.drafters.second_readings``),
    as the page's notation takes them (``Notation.second_readings``)."""
    return {word: found for item in items for word, found in item.region.extra.get("second_readings", {}).items()}


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


#: Region labels whose reading is their lines' readings joined (``PageJob.read_by_lines``).
LINE_READ_LABELS = frozenset({"text", "title", "list", "caption", "footnote", "header", "footer", "page_number"})


def empty_cache(device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _region_bound(draft: list[int]) -> int:
    """Stage 1's output bound for a region: twice its draft and some slack, or a fixed bound."""
    if draft:
        return REGION_TOKENS_PER_DRAFT_TOKEN * len(draft) + REGION_TOKENS_SLACK
    return UNDRAFTED_REGION_TOKENS


def _crop(image, bbox, scale: float, pad_pt: float):
    """The region's pixels: bbox (points) scaled to the rendered image, plus a margin."""
    x0, y0, x1, y1 = bbox
    box = (max(0, int((x0 - pad_pt) * scale)), max(0, int((y0 - pad_pt) * scale)),
           min(image.width, int((x1 + pad_pt) * scale + 1)), min(image.height, int((y1 + pad_pt) * scale + 1)))
    if box[2] - box[0] < 2 or box[3] - box[1] < 2:
        box = (0, 0, image.width, image.height)
    return image.crop(box)
