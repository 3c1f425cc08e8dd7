"""One page being decoded: the context every stage of the engine reads and writes (``PageJob``).

A ``PageJob`` holds the page image, its regions as the drafter delivers them (``PageRegions``), its
counters and seconds, the event and cancel hooks, and the document's learned notation and history;
it also builds what the stages share: stop rules, decoders, the crops' prefills and the region rows
of Stage 1. The stages themselves (``core.stages``) only schedule rows.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable

import torch

from core.drafters.background import DraftJob, exact_text
from core.drafters.base import Region
from core.errors import CancelledError
from core.events import RegionVerified, RegionsDrafted
from core.results import FIGURE_LABELS, PageStats, RegionStats, TextSpan
from core.speculative.budget import PassCost
from core.speculative.decode import DecodeRow, SpeculativeDecoder
from core.speculative.history import OutputHistory
from core.speculative.mathmode import inside_math
from core.speculative.page_drafts import PageDrafts
from core.speculative.stopping import StopRule
from core.speculative.textmatch import Notation
from core.targets.base import BatchPrefill, PrefillRequest
from core.targets.profiles import style_of
from core.targets.protocol import PageTarget
from core.tuning import REGION_TOKENS_PER_DRAFT_TOKEN, REGION_TOKENS_SLACK, UNDRAFTED_REGION_TOKENS

EventCallback = Callable[[object], None]


@contextmanager
def timed(seconds: dict, key: str, device=None):
    """Add the wall-clock seconds of the block to ``seconds[key]``, the GPU synchronised first and
    last so that queued work is counted."""
    _sync(device)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _sync(device)
        seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - t0


def _sync(device) -> None:
    if getattr(device, "type", None) == "cuda":
        torch.cuda.synchronize(device)


class PageRegions:
    """A page's regions and what the stages keep per region, as lists they all share. Empty until
    the drafting job delivers; ``poll`` fills them in place (once), so every stage sees them."""

    def __init__(self, job: DraftJob, encode: Callable[[str], list[int]],
                 on_drafted: Callable[[list[Region]], None]):
        self.job, self.encode, self.on_drafted = job, encode, on_drafted
        self.ready = False
        self.regions: list[Region] = []
        self.stats: list[RegionStats] = []
        self.outputs: list[str] = []      # Stage 1 text per region
        self.tokens: list[list[int]] = []  # token draft per region ([] for figures and empty text)
        self.texts: list[str] = []        # cleaned draft text per region ("" where tokens are [])
        self.exact: list[bool] = []       # the draft is the document's own text, not a reading
        self.figure_texts: list[str] = []  # text read inside a figure region ("" elsewhere)

    def poll(self) -> bool:
        """Take the job's regions if it has finished; True only on the call that takes them."""
        if self.ready or not self.job.done():
            return False
        self._install(self.job.result())
        return True

    def wait(self) -> None:
        if not self.ready:
            self._install(self.job.result())

    def reset_stage1(self) -> None:
        """Forget what Stage 1 found (an attempt abandoned for memory must not leave its results)."""
        for rs in self.stats:
            rs.verified, rs.fallback, rs.accepted_tokens, rs.forward_passes, rs.output_tokens = (
                False, False, 0, 0, 0)
        self.outputs[:] = [""] * len(self.outputs)

    def _install(self, regions: list[Region]) -> None:
        from core.drafters.normalize import clean_draft_text

        self.ready = True
        for r in regions:
            figure = r.label in FIGURE_LABELS
            text = clean_draft_text(r.text) if not figure else ""
            tokens = self.encode(text) if text else []
            self.regions.append(r)
            self.stats.append(RegionStats(label=r.label, bbox=tuple(r.bbox), verified=False,
                                          drafted_tokens=len(tokens)))
            self.outputs.append("")
            self.tokens.append(tokens)
            self.texts.append(text if tokens else "")
            self.exact.append(exact_text(r))
            self.figure_texts.append(clean_draft_text(r.text) if figure and r.text else "")
        if regions:
            self.on_drafted(self.regions)


class PageJob:
    """Everything one page's decode shares: ``config`` (an ``EngineConfig``), the ``target``, the
    rendered ``image`` (``scale`` pixels per point), ``regions``, ``stats`` and ``seconds``; the
    document's ``history`` and ``notation`` (None: the page learns alone); ``pass_cost`` (None:
    proposals are not priced)."""

    def __init__(self, config, target: PageTarget, image, scale: float, number: int, regions: PageRegions,
                 seconds: dict, emit: EventCallback, should_cancel: Callable[[], bool] | None,
                 pass_cost: PassCost | None, notation: Notation | None, history: OutputHistory | None):
        self.config, self.target = config, target
        self.image, self.scale, self.number = image, scale, number
        self.regions = regions
        self.stats = PageStats(mode=config.mode)
        self.seconds = seconds
        self.emit, self.should_cancel = emit, should_cancel
        self.pass_cost = pass_cost
        self.document_notation, self.history = notation, history

    # -- shared pieces --------------------------------------------------------------------------

    def timed(self, key: str):
        return timed(self.seconds, key, self.target.device)

    def check_cancel(self) -> None:
        if self.should_cancel and self.should_cancel():
            raise CancelledError("cancelled")

    def notation(self) -> Notation:
        """The document's learned notation, or (no document) a new one for this page's rows."""
        return self.document_notation if self.document_notation is not None else Notation()

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
        """Stage 2's drafts: every region's, refined as Stage 1 reads them."""
        r, target = self.regions, self.target
        return PageDrafts(r.tokens, r.texts, target.encode, target.decode, self.config.proposal,
                          notation=notation, history=self.history, style=style_of(target),
                          figure_texts=r.figure_texts)

    # -- Stage 1 rows ---------------------------------------------------------------------------

    def stage1_todo(self) -> list[int]:
        """Regions Stage 1 reads: every text region (hsd may skip some drafters' regions, and skips
        Stage 1 altogether on a short page whose drafts are all exact text: ``stage1_min_tokens``).
        A region the drafter found but could not read (a formula image, an empty OCR line) is
        decoded from its crop without a draft: beside the page row that costs no passes of its own."""
        cfg, r = self.config, self.regions
        skip = () if cfg.mode == "regions" else cfg.stage1_skip_sources
        todo = [i for i, region in enumerate(r.regions)
                if region.label not in FIGURE_LABELS and region.source not in skip]
        if cfg.mode == "hsd" and sum(len(d) for d in r.tokens) < cfg.stage1_min_tokens and all(
                r.exact[i] for i in todo if r.tokens[i]):
            return []  # a short born-digital page: Stage 2 reads its exact drafts in a few passes
        return todo

    def prefill_regions(self, chunk: list[int]) -> BatchPrefill:
        """The crops of regions ``chunk``, prefilled together (one forward pass where the family can)."""
        self.check_cancel()
        cfg, regions = self.config, self.regions.regions
        requests = [PrefillRequest(_crop(self.image, regions[i].bbox, self.scale, cfg.region_pad_pt),
                                   kind="region", label=regions[i].label, region=i) for i in chunk]
        before = self.seconds.get("prefill", 0.0)
        with self.timed("prefill"):
            bp = self.target.prefill_batch(requests)
        if self.pass_cost is not None:
            self.pass_cost.add_crops(len(chunk), self.seconds["prefill"] - before)
        return bp

    def region_rows(self, chunk: list[int], bp: BatchPrefill, notation: Notation | None = None) -> list[DecodeRow]:
        """Stage 1 rows of regions ``chunk`` (``notation`` None: each row learns its own)."""
        cfg, target, drafts, texts = self.config, self.target, self.regions.tokens, self.regions.texts
        # In hsd mode Stage 1 only refines drafts: a region whose draft the target keeps rejecting
        # is abandoned (its raw draft still serves Stage 2). The regions baseline decodes in full.
        give_up = cfg.stage1_give_up if cfg.mode == "hsd" else 0.0
        # The same strategies as the page: token n-grams, then normalised text (rapid-table's HTML
        # and the model's differ in spacing), then the output's own n-grams (table markup repeats).
        return [DecodeRow(proposer=PageDrafts([drafts[i]], [texts[i]], target.encode, target.decode,
                                              cfg.proposal, regions=[i], notation=notation,
                                              history=self.history).proposer,
                          stop=self.stop(min(cfg.max_new_tokens, _region_bound(drafts[i]))),
                          length=bp.lengths[k], rope_delta=bp.rope_deltas[k],
                          root=int(bp.logits[k].argmax()), tag=i, give_up_below=give_up)
                for k, i in enumerate(chunk)]

    def region_done(self, row: DecodeRow) -> list[int] | None:
        """Record a finished Stage 1 row; returns the region's refined tokens (None: not verified)."""
        if row.stop_reason == "superseded":
            return None  # the page finished first: this region's output is not needed
        i, rs = row.tag, self.regions.stats[row.tag]
        rs.verified = True
        rs.accepted_tokens, rs.forward_passes = row.stats.accepted, row.stats.forward_passes
        out = row.output  # "low_acceptance": a partial refinement; Stage 2 also sees the raw draft
        if row.stop_reason == "repetition" and self.regions.regions[i].label != "table":
            out, rs.fallback = list(self.regions.tokens[i]), True
        rs.output_tokens = len(out)
        self.emit(RegionVerified(page=self.number, region=i, stats=rs, text=self.target.decode(out)))
        return out


def new_page_regions(job: DraftJob, target: PageTarget, number: int, emit: EventCallback) -> PageRegions:
    """The regions of page ``number`` as ``job`` delivers them, announced with ``RegionsDrafted``."""
    return PageRegions(job, target.encode, lambda rs: emit(RegionsDrafted(page=number, regions=rs)))


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
    if getattr(device, "type", None) == "cuda":
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
