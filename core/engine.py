"""The conversion engine: Stage 1 (regions), Stage 2 (page) and the baselines.

Modes (``EngineConfig.mode``):

* ``ar``      plain greedy decoding of the page with a KV cache: the baseline and the reference output.
* ``hsd``     Stage 2 decodes the whole page from the first pass on; beside it, in the same batched
              forward passes, Stage 1 verifies each region's draft on its crop, and every finished
              region's refined text becomes a Stage 2 draft. The page-level output is returned, so at
              ``tau = 1`` it equals ``ar`` token for token (the page row is prefilled alone).
* ``page``    Stage 2 only, drafts = the drafter's raw region texts (prompt-lookup style baseline).
* ``regions`` Stage 1 only, region outputs concatenated (region-parallel baseline; not lossless).

The engine reports progress as events (``core.results``) through ``on_event`` and checks
``should_cancel`` between forward passes. With the target on a GPU, ``convert_page`` drafts on a
thread beside the decode (``core.drafters.background``): the target starts at once and speculates
once the drafts arrive.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import torch

from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.errors import CancelledError, HSDError
from core.results import (PageDone, PageResult, PageStarted, PageStats, RegionStats, RegionsDrafted,
                          RegionVerified, TextAppended, TextSpan)
from core.speculative.decode import DecodeRow, SpeculativeDecoder
from core.speculative.budget import PassCost, stage1_pays
from core.speculative.detokenize import IncrementalDetokenizer
from core.speculative.matching import ProposalConfig
from core.speculative.history import OutputHistory
from core.speculative.page_drafts import PageDrafts
from core.speculative.proposers import NoDrafts
from core.speculative.textmatch import Notation
from core.targets.base import BatchPrefill, PrefillRequest
from core.speculative.mathmode import inside_math
from core.speculative.stopping import RepetitionGuard, StopRule

MODES = ("ar", "hsd", "page", "regions")
#: Region labels with no text to verify: kept for export (figures are cropped and linked).
NON_TEXT_LABELS = frozenset({"figure", "image", "picture"})

#: Drafters whose text is the document's own (not a reading of its pixels).
TRUSTED_SOURCES = frozenset({"textlayer"})

#: Stage 1's output bound for a region without a draft (drafted ones: twice the draft, plus 32).
UNDRAFTED_REGION_TOKENS = 256
#: Passes a new engine waits, at most, for passes of two widths to price a token of width before it
#: admits Stage 1 rows (without drafts the page's passes stay one token wide).
PRICE_PASSES = 8

EventCallback = Callable[[object], None]


@dataclass
class EngineConfig:
    model: str | None = None            # hub id or folder; None = core.targets.loader.DEFAULT_MODEL
    mode: str = "hsd"
    tau: float = 1.0
    drafter: str = "auto"
    dpi: int = 144
    device: str | None = None
    dtype: str | None = None
    max_new_tokens: int = 4096
    trust_remote_code: bool = False
    region_pad_pt: float = 4.0          # margin around a region's bbox for its crop, in points
    stage1_batch: int = 16              # regions verified together (halved on out-of-memory)
    stage1_give_up: float = 0.0         # hsd: abandon a region below this many tokens per pass (0: never;
    #                                     beside the page row a slow region costs batch width, not passes)
    stage1_skip_sources: tuple = ()     # hsd: drafters whose regions go to Stage 2 unrefined
    stage1_min_tokens: int = 160        # hsd: a page drafted by the text layer alone with fewer draft tokens
    #                                     goes without Stage 1 (its crop prefill costs more than it can save)
    background_drafting: str = "auto"   # convert_page drafts on a thread while the target decodes: on, off,
    #                                     or auto (on where the target is not on the CPU; see drafts_beside_decode)
    repetition: RepetitionGuard = field(default_factory=RepetitionGuard)
    proposal: ProposalConfig = field(default_factory=ProposalConfig)

    def __post_init__(self):
        if self.mode not in MODES:
            raise HSDError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if not 0.0 < self.tau <= 1.0:
            raise HSDError(f"tau must be in (0, 1], got {self.tau}")
        if self.max_new_tokens < 1:
            raise HSDError("max-new-tokens must be at least 1")
        if self.background_drafting not in ("auto", "on", "off"):
            raise HSDError(f"background drafting must be auto, on or off, got {self.background_drafting!r}")


def clean_draft(text: str) -> str:
    from core.drafters.normalize import clean_draft_text

    return clean_draft_text(text)


class _Timer:
    """Wall-clock seconds of a block, with the GPU synchronised so that queued work is counted."""

    def __init__(self, seconds: dict, key: str, device):
        self.seconds, self.key, self.device = seconds, key, device

    def __enter__(self):
        self._sync()
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        self._sync()
        self.seconds[self.key] = self.seconds.get(self.key, 0.0) + time.perf_counter() - self.t0

    def _sync(self):
        if getattr(self.device, "type", None) == "cuda":
            torch.cuda.synchronize(self.device)


class Engine:
    """Converts pages. ``target`` and ``drafter`` are loaded from the config on first use unless given."""

    def __init__(self, config: EngineConfig | None = None, target=None, drafter=None,
                 pass_cost: PassCost | None = None):
        """``pass_cost``: share one target's measured pass cost between engines (the benchmark's)."""
        self.config = config or EngineConfig()
        self._target = target
        self._drafter = drafter
        self._notation: Notation | None = None  # set by start_document
        self._history: OutputHistory | None = None  # likewise: the document's earlier pages' output
        # What a forward pass costs on this target, learned over every page this engine converts.
        self._pass_cost = (pass_cost or PassCost()) if self.config.proposal.cost_aware else None
        self._document_key = None

    @property
    def target(self):
        if self._target is None:
            from core.targets.loader import load_target

            c = self.config
            self._target = load_target(c.model or _default_model(), device=c.device, dtype=c.dtype,
                                       trust_remote_code=c.trust_remote_code)
        return self._target

    @property
    def drafter(self):
        if self._drafter is None:
            from core.drafters import get_drafter

            self._drafter = get_drafter(self.config.drafter)
        return self._drafter

    @property
    def loaded_target(self):
        """The target if it is loaded already, else None (never loads)."""
        return self._target

    def prepare(self) -> None:
        """Load the target and build the drafter now (raises ModelLoadError, DrafterUnavailableError)."""
        _ = self.target, self.drafter

    @property
    def drafts_beside_decode(self) -> bool:
        """Whether ``convert_page`` drafts on a thread while the target decodes. ``auto``: where the
        target runs on a GPU, whose passes leave the CPU to the drafter. On a CPU both need the same
        cores: on two, drafting beside the tiny model's decode made scans 1.5x slower than drafting
        first (oversubscribed threads), so there the drafter goes first."""
        mode = self.config.background_drafting
        if mode == "auto":
            return getattr(self.target.device, "type", "cpu") != "cpu"
        return mode == "on"

    # -- documents --------------------------------------------------------------------------------

    def start_document(self, key) -> None:
        """Pages converted from now on share one learned notation (``Notation``): how the model
        wrote the drafts' words and numbers on one page (``$8 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$``
        for ``8 wt%TiO2``) is proposed on the next. ``key`` names the document: starting the same
        document again keeps what was learned, another one starts afresh. Without a document, each
        page learns alone. The earlier pages' output is a draft for the later ones too
        (``OutputHistory``): a manual's tables repeat their rules and rows, a report its headers."""
        if key != self._document_key or self._notation is None:
            self._notation, self._document_key = Notation(), key
            self._history = OutputHistory(self.config.proposal.max_ngram)

    def _page_notation(self) -> Notation:
        return self._notation if self._notation is not None else Notation()

    def remember_pages(self, document, results: Iterable[PageResult]) -> None:
        """Pages of ``document`` converted in an earlier run (a resumed conversion reuses their saved
        results) join its history as if converted now, so the pages still to do are drafted from
        them too. Saved results keep no token ids, so their Markdown is encoded again; a draft that
        tokenises differently only costs acceptance, never correctness."""
        self.start_document(_document_key(document))
        if self.config.mode == "ar":
            return  # no history to feed: do not encode pages for nothing
        for result in results:
            if result.error or not (result.output_tokens or result.markdown):
                continue
            self._remember(result.output_tokens or self.target.encode(result.markdown))

    def _remember(self, output_tokens: list[int]) -> None:
        """A finished page's output joins the document's history (``ar`` proposes nothing: skip)."""
        if self._history is not None and self.config.mode != "ar":
            self._history.add_page(output_tokens)

    def convert_document(self, document, page_indices: Iterable[int] | None = None,
                         on_event: EventCallback | None = None,
                         should_cancel: Callable[[], bool] | None = None) -> Iterator[PageResult]:
        """Convert pages one at a time (rendered lazily). A page that fails yields a result with
        ``error`` set and the rest go on; cancelling raises ``CancelledError``."""
        indices = list(range(document.page_count) if page_indices is None else page_indices)
        emit = on_event or (lambda e: None)
        self.prepare()  # a missing model or drafter is the job's error, not each page's
        self.start_document(_document_key(document))
        for n, i in enumerate(indices):
            if should_cancel and should_cancel():
                raise CancelledError("cancelled")
            page = document.page(i)
            emit(PageStarted(page=i + 1, index=n, total=len(indices)))
            try:
                result = self.convert_page(page, on_event, should_cancel)
            except (CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:  # one bad page never sinks the document
                result = failed_page(i + 1, page.width, page.height, self.config.mode, exc)
            emit(PageDone(page=i + 1, result=result))
            yield result

    def convert_page(self, page, on_event: EventCallback | None = None,
                     should_cancel: Callable[[], bool] | None = None) -> PageResult:
        """Render, draft and decode one page. On a GPU the drafter runs on a thread beside the decode
        (``drafts_beside_decode``; ``core.drafters.background``), started after the render so that
        only it touches the PDF meanwhile. Drafted in every mode: AR does not decode with the drafts,
        but figures and the overlay come from the regions."""
        seconds = _zero_seconds()
        t_start = time.perf_counter()
        with _Timer(seconds, "render", None):
            image = page.render(self.config.dpi)
        drafter = self.drafter  # configuration errors (unknown, not installed) surface here
        job = DraftJob(drafter, page, background=self.drafts_beside_decode)
        try:
            result = self.convert_image(image, job, page.width, page.height, page.number,
                                        on_event=on_event, should_cancel=should_cancel, seconds=seconds)
        finally:
            job.result()  # a cancelled page leaves no drafter running on the document
        result.stats.seconds["draft"] = job.seconds  # overlapped with the decode, not added to it
        result.stats.seconds["total"] = time.perf_counter() - t_start
        result.page_image = image
        result.stats.draft_error = job.error
        return result

    # -- one page image ---------------------------------------------------------------------------

    def convert_image(self, image, regions: "list[Region] | DraftJob", width: float, height: float,
                      page_number: int = 1, on_event: EventCallback | None = None,
                      should_cancel: Callable[[], bool] | None = None,
                      seconds: dict | None = None) -> PageResult:
        """Convert one rendered page. ``regions`` carry bboxes in points of a ``width`` x ``height``
        page; ``image`` may be rendered at any scale. ``regions`` may also be a ``DraftJob`` still
        running: ``hsd`` and ``page`` then decode without drafts until it delivers."""
        cfg = self.config
        emit = on_event or (lambda e: None)
        seconds = seconds if seconds is not None else _zero_seconds()
        t_start = time.perf_counter()
        target = self.target
        stats = PageStats(mode=cfg.mode)
        page = _PageRegions(regions if isinstance(regions, DraftJob) else DraftJob.finished(regions),
                            target.encode, lambda rs: emit(RegionsDrafted(page=page_number, regions=rs)))
        page.poll()  # drafted already: the drafts serve from the first pass on
        regions, region_stats, region_outputs = page.regions, page.stats, page.outputs
        drafts, draft_texts = page.tokens, page.texts
        if getattr(getattr(target, "profile", None), "element_level", False):
            page.wait()  # the layout decides what is read
            markdown, output_tokens, spans = self._elements(image, image.width / width, page, stats, seconds,
                                                            should_cancel, emit, page_number)
            region_outputs = page.outputs
        elif cfg.mode == "regions":
            page.wait()  # Stage 1 alone has nothing to decode without the regions
            region_tokens = self._stage1(image, image.width / width, regions, drafts, draft_texts,
                                         region_stats, stats, seconds, should_cancel, emit, page_number)
            region_outputs = [target.decode(t) for t in region_tokens]
            parts, spans, pos = [], [], 0
            for i, text in enumerate(region_outputs):
                if not text.strip():
                    continue
                if parts:
                    pos += 2
                spans.append(TextSpan(region=i, start=pos, end=pos + len(text)))
                parts.append(text)
                pos += len(text)
            markdown = "\n\n".join(parts)
            output_tokens = [t for toks in region_tokens for t in toks]
            stats.generated_tokens = sum(len(t) for t in region_tokens)
            emit(TextAppended(page=page_number, text=markdown))
        else:
            if cfg.mode == "hsd":
                row = self._hsd(image, image.width / width, page, stats, seconds, should_cancel, emit, page_number)
            else:
                row = self._stage2(image, page if cfg.mode == "page" else None, stats, seconds, should_cancel,
                                   emit, page_number)
            page.wait()  # the page may finish before its drafter: figures and the overlay need the regions
            markdown = target.decode(row.output)
            output_tokens = row.output
            stats.tree_passes = row.tree_passes
            spans = _spans(row, target)
            for region, count in _origin_counts(row).items():
                region_stats[region].page_accepted_tokens += count
            stats.generated_tokens = len(row.output)
            stats.drafted_tokens, stats.accepted_tokens = row.proposed, row.accepted
            stats.stop_reason = row.stop_reason

        stats.forward_passes = stats.prefill_passes + stats.stage1_passes + stats.stage2_passes
        finished = _native_to_markdown(target, markdown)
        if finished != markdown:  # the family's native format, converted: the spans no longer fit
            markdown, spans = finished, []
        self._remember(output_tokens)
        seconds["total"] = seconds.get("total", 0.0) + time.perf_counter() - t_start
        stats.seconds = seconds
        return PageResult(page=page_number, width=width, height=height, markdown=markdown,
                          regions=regions, region_stats=region_stats, region_outputs=region_outputs,
                          spans=spans, stats=stats, output_tokens=list(output_tokens))

    # -- stages -----------------------------------------------------------------------------------

    def _decoder(self, should_cancel, on_step=None) -> SpeculativeDecoder:
        cfg = self.config
        relax = None
        if cfg.tau < 1.0:
            target = self.target
            relax = lambda toks: not inside_math(target.decode(toks))  # noqa: E731
        return SpeculativeDecoder(self.target, cfg.proposal, tau=cfg.tau, relax_allowed=relax,
                                  should_cancel=should_cancel, on_step=on_step, cost=self._pass_cost)

    def _stop(self, max_new_tokens: int) -> StopRule:
        return StopRule(self.target.eos_token_ids, max_new_tokens, self.config.repetition)

    def _stage1_todo(self, regions, drafts) -> list[int]:
        """Regions Stage 1 reads: every text region (hsd may skip some drafters' regions, and skips
        Stage 1 altogether on a short page drafted by the text layer alone: ``stage1_min_tokens``).
        A region the drafter found but could not read (a formula image, an empty OCR line) is
        decoded from its crop without a draft: beside the page row that costs no passes of its own."""
        cfg = self.config
        skip = () if cfg.mode == "regions" else cfg.stage1_skip_sources
        todo = [i for i, r in enumerate(regions) if r.label not in NON_TEXT_LABELS and r.source not in skip]
        if cfg.mode == "hsd" and sum(len(d) for d in drafts) < cfg.stage1_min_tokens and all(
                regions[i].source in TRUSTED_SOURCES for i in todo if drafts[i]):
            return []  # a short born-digital page: Stage 2 reads its exact drafts in a few passes
        return todo

    def _prefill_regions(self, image, scale, regions, chunk, seconds, should_cancel) -> BatchPrefill:
        """The crops of regions ``chunk``, prefilled together (one forward pass where the family can)."""
        cfg, target = self.config, self.target
        if should_cancel and should_cancel():
            raise CancelledError("cancelled")
        requests = [PrefillRequest(_crop(image, regions[i].bbox, scale, cfg.region_pad_pt), kind="region",
                                   label=regions[i].label, region=i) for i in chunk]
        before = seconds.get("prefill", 0.0)
        with _Timer(seconds, "prefill", target.device):
            bp = target.prefill_batch(requests)
        if self._pass_cost is not None:
            self._pass_cost.add_crops(len(chunk), seconds["prefill"] - before)
        return bp

    def _region_rows(self, chunk, bp: BatchPrefill, drafts, draft_texts, notation=None) -> list[DecodeRow]:
        cfg, target = self.config, self.target
        # In hsd mode Stage 1 only refines drafts: a region whose draft the target keeps rejecting
        # is abandoned (its raw draft still serves Stage 2). The regions baseline decodes in full.
        give_up = cfg.stage1_give_up if cfg.mode == "hsd" else 0.0
        # The same strategies as the page: token n-grams, then normalised text (rapid-table's HTML
        # and the model's differ in spacing), then the output's own n-grams (table markup repeats).
        return [DecodeRow(proposer=PageDrafts([drafts[i]], [draft_texts[i]], target.encode, target.decode,
                                              cfg.proposal, regions=[i], notation=notation,
                                              history=self._history).proposer,
                          stop=self._stop(min(cfg.max_new_tokens, 2 * len(drafts[i]) + 32 if drafts[i]
                                              else UNDRAFTED_REGION_TOKENS)),
                          length=bp.lengths[k], rope_delta=bp.rope_deltas[k],
                          root=int(bp.logits[k].argmax()), tag=i, give_up_below=give_up)
                for k, i in enumerate(chunk)]

    def _region_done(self, row: DecodeRow, regions, drafts, region_stats, emit, page_number) -> list[int] | None:
        """Record a finished Stage 1 row; returns the region's refined tokens (None: not verified)."""
        if row.stop_reason == "superseded":
            return None  # the page finished first: this region's output is not needed
        i, rs = row.tag, region_stats[row.tag]
        rs.verified = True
        rs.accepted_tokens, rs.forward_passes = row.accepted, row.forward_passes
        out = row.output  # "low_acceptance": a partial refinement; Stage 2 also sees the raw draft
        if row.stop_reason == "repetition" and regions[i].label != "table":
            out, rs.fallback = list(drafts[i]), True
        rs.output_tokens = len(out)
        emit(RegionVerified(page=page_number, region=i, stats=rs, text=self.target.decode(out)))
        return out

    def _stage1(self, image, scale, regions, drafts, draft_texts, region_stats, stats, seconds, should_cancel,
                emit, page_number) -> list[list[int]]:
        """The regions baseline: decode every text region on its crop, ``stage1_batch`` at a time."""
        target, cfg = self.target, self.config
        todo = self._stage1_todo(regions, drafts)
        out: list[list[int]] = [[] for _ in regions]
        batch = max(1, cfg.stage1_batch)
        pos = 0
        while pos < len(todo):
            chunk = todo[pos:pos + batch]
            try:
                bp = self._prefill_regions(image, scale, regions, chunk, seconds, should_cancel)
                rows = self._region_rows(chunk, bp, drafts, draft_texts)
                decoder = self._decoder(should_cancel)
                with _Timer(seconds, "verify", target.device):
                    decoder.run(rows, bp.cache, bp.valid)
                passes, bp = bp.passes, None  # this batch's KV is done: free it before the next prefills
            except torch.OutOfMemoryError:
                # Drop the failed batch's caches before retrying: held in these locals they would
                # stay allocated while the smaller batch prefills.
                bp = rows = decoder = None
                _empty_cache(target.device)
                if batch == 1:
                    raise HSDError("out of GPU memory even for one region at a time; "
                                   "try --device cpu or a lower --dpi") from None
                batch = max(1, batch // 2)
                continue
            stats.prefill_passes += passes
            stats.stage1_passes += decoder.forward_passes
            for row in rows:
                out[row.tag] = self._region_done(row, regions, drafts, region_stats, emit, page_number) or []
            pos += len(chunk)
        return out

    def _hsd(self, image, scale, page: "_PageRegions", stats, seconds, should_cancel, emit,
             page_number) -> DecodeRow:
        """Stage 1 and Stage 2 in one batch, as the reference runs them.

        The page row starts decoding at once with the raw drafts (none yet while a background
        drafter runs: those join, with their Stage 1 rows, the pass after it delivers); up to
        ``stage1_batch`` region rows decode beside it in the same forward passes (fewer where the
        measured cost of width or of a crop prefill says they do not pay: ``core.speculative.budget``),
        more are admitted as they finish, and each finished region's output becomes a Stage 2 draft
        from the next pass on. Stage 1 therefore
        costs no passes of its own, only its prefills. Out of memory: the page starts over with half
        the regions beside it, and finally with none (Stage 2 on the raw drafts, still lossless).
        """
        target, cfg = self.target, self.config
        batch = max(0, cfg.stage1_batch)
        while True:
            for rs in page.stats:  # an abandoned attempt's region results must not survive it
                rs.verified, rs.fallback, rs.accepted_tokens, rs.forward_passes, rs.output_tokens = (
                    False, False, 0, 0, 0)
            page.outputs[:] = [""] * len(page.outputs)
            try:
                return self._hsd_attempt(image, scale, page, stats, seconds, should_cancel, emit, page_number,
                                         batch)
            except _PageOutOfMemory:
                raise  # the page alone does not fit: fewer regions beside it cannot help
            except torch.OutOfMemoryError:
                if batch == 0:
                    raise
            # Freed here, after the handler: until it ends, the traceback holds the failed attempt's
            # frames and with them its KV caches.
            _empty_cache(target.device)
            batch //= 2

    def _hsd_attempt(self, image, scale, page: "_PageRegions", stats, seconds, should_cancel, emit, page_number,
                     batch: int) -> DecodeRow:
        target, cfg = self.target, self.config
        regions, drafts, draft_texts = page.regions, page.tokens, page.texts
        region_stats, region_outputs = page.stats, page.outputs
        notation = self._page_notation()  # what any row learns serves every row (and later pages)
        pending: list[int] = []
        page_drafts: PageDrafts | None = None

        def drafts_arrived() -> None:
            nonlocal page_drafts
            page_drafts = PageDrafts(drafts, draft_texts, target.encode, target.decode, cfg.proposal,
                                     notation=notation, history=self._history)
            pending[:] = self._stage1_todo(regions, drafts) if batch else []

        if page.ready:
            drafts_arrived()
        prefill_passes = 0
        try:
            with _Timer(seconds, "prefill", target.device):
                prefill = target.prefill_batch([PrefillRequest(image, kind="page")])
        except torch.OutOfMemoryError as exc:
            raise _PageOutOfMemory(str(exc)) from None
        prefill_passes += prefill.passes
        page_row = DecodeRow(proposer=page_drafts.proposer if page_drafts else NoDrafts(),
                             stop=self._stop(cfg.max_new_tokens),
                             length=prefill.lengths[0], rope_delta=prefill.rope_deltas[0],
                             root=int(prefill.logits[0].argmax()), ends_batch=True)
        cache, valid = prefill.cache, prefill.valid
        del prefill

        def admit(live):
            nonlocal prefill_passes
            if page.poll():  # the drafter has just delivered: speculate from the next pass on
                drafts_arrived()
                page_row.proposer = page_drafts.proposer
            cost = decoder.cost
            if pending and cost is not None:
                if cost.passes < 2 or (not cost.slope_measured and cost.passes < PRICE_PASSES):
                    # A new engine's first page: price a pass, and a token of width (passes of
                    # different widths), before adding rows that widen every pass. Until then b
                    # reads 0 and every region would look free.
                    return None
                # Where a crop prefill costs several passes (a CPU), only regions long enough to repay
                # it; before the first crop is timed (taken as free), those whose tokens save more
                # than they cost. Regions without a draft: where a token of their reading pays at all.
                pending[:] = [i for i in pending if stage1_pays(
                    len(drafts[i]) if drafts[i] else None, regions[i].source in TRUSTED_SOURCES,
                    cost.crop_seconds or 0.0, cost.a, cost.b)]
            busy = sum(1 for r in live if r is not page_row)
            # Where wider passes cost more (a CPU), only as many rows as the measured cost affords.
            slots = decoder.affordable_rows(batch)
            if not pending or busy > slots // 2 or busy >= slots:
                return None  # refill once half the region slots are free: fewer, fuller prefills
            chunk = pending[:slots - busy]
            del pending[:len(chunk)]
            bp = self._prefill_regions(image, scale, regions, chunk, seconds, should_cancel)
            prefill_passes += bp.passes
            new_rows = self._region_rows(chunk, bp, drafts, draft_texts, notation)
            region_rows.extend(new_rows)
            return new_rows, bp.cache, bp.valid

        detok = IncrementalDetokenizer(target.decode)
        region_rows: list[DecodeRow] = []
        recorded: set[int] = set()

        def record(rows) -> None:
            refined = False
            for row in rows:
                if row is page_row or not row.done or row.tag in recorded:
                    continue
                recorded.add(row.tag)
                out = self._region_done(row, regions, drafts, region_stats, emit, page_number)
                if out is not None:
                    region_outputs[row.tag] = target.decode(out)
                    page_drafts.refine(row.tag, out, region_outputs[row.tag])
                    refined = True
            if refined:
                page_drafts.rejoin()

        def on_step(rows, gained):
            record(region_rows)  # also rows that stopped at admission (a region that reads as nothing)
            for row in rows:  # region rows exist only once the drafts (page_drafts) have arrived
                if row is not page_row and not row.done:
                    page_drafts.grow(row.tag, row.output)
            text = detok.push(page_row.output)
            if text:
                emit(TextAppended(page=page_number, text=text))

        decoder = self._decoder(should_cancel, on_step)
        with _Timer(seconds, "verify", target.device):
            decoder.run([page_row], cache, valid, admit=admit)
        record(region_rows)
        stats.prefill_passes += prefill_passes
        stats.stage2_passes += decoder.forward_passes
        return page_row

    def _stage2(self, image, page: "_PageRegions | None", stats, seconds, should_cancel, emit,
                page_number) -> DecodeRow:
        """Decode the page alone, verifying the trees its drafts offer (``page`` None: plain AR)."""
        target, cfg = self.target, self.config

        def proposer():
            if page is None or not page.ready:
                return NoDrafts()
            return PageDrafts(page.tokens, page.texts, target.encode, target.decode, cfg.proposal,
                              notation=self._page_notation(), history=self._history).proposer

        with _Timer(seconds, "prefill", target.device):
            prefill = target.prefill(image, kind="page")
        stats.prefill_passes += 1
        row = DecodeRow(proposer=proposer(),
                        stop=self._stop(cfg.max_new_tokens), length=prefill.length,
                        rope_delta=prefill.rope_delta, root=int(prefill.logits.argmax()))
        detok = IncrementalDetokenizer(target.decode)

        def on_step(rows, gained):
            if page is not None and page.poll():  # the drafter has just delivered
                rows[0].proposer = proposer()
            text = detok.push(rows[0].output)
            if text:
                emit(TextAppended(page=page_number, text=text))

        decoder = self._decoder(should_cancel, on_step)
        valid = torch.ones(1, prefill.length, dtype=torch.bool, device=target.device)
        with _Timer(seconds, "verify", target.device):
            decoder.run([row], prefill.cache, valid)
        stats.stage2_passes += decoder.forward_passes
        return row


    # -- element-level families -------------------------------------------------------------------

    def _elements(self, image, scale, page: "_PageRegions", stats, seconds, should_cancel, emit,
                  page_number) -> tuple[str, list[int], list[TextSpan]]:
        """An element-level model's page (``Profile.element_level``: PaddleOCR-VL, GLM-OCR): every
        text region of the layout read on its own crop with its label's task prompt, the outputs
        joined in reading order. ``ar`` reads each crop greedily; ``hsd`` (and ``page``,
        ``regions``) verifies the region's draft on the same crop with the same prompt, so at
        ``tau = 1`` it gives ``ar``'s output. Each region may write up to ``max_new_tokens``, whatever
        its draft, so both modes stop alike. A page without text regions reads as empty: the whole
        page is never sent with an element prompt."""
        target, cfg = self.target, self.config
        regions, region_stats, outputs = page.regions, page.stats, page.outputs
        todo = [i for i, r in enumerate(regions) if r.label not in NON_TEXT_LABELS]
        use_drafts = cfg.mode != "ar"
        notation = self._page_notation() if use_drafts else None
        tokens: dict[int, list[int]] = {}
        reasons: list[str] = []
        batch, pos = max(1, cfg.stage1_batch), 0
        while pos < len(todo):
            chunk = todo[pos:pos + batch]
            try:
                rows, passes = self._read_elements(image, scale, page, chunk, notation, use_drafts, stats,
                                                   seconds, should_cancel)
            except torch.OutOfMemoryError:
                _empty_cache(target.device)
                if batch == 1:
                    raise HSDError("out of GPU memory even for one region at a time; "
                                   "try --device cpu or a lower --dpi") from None
                batch //= 2
                continue
            pos += len(chunk)
            stats.prefill_passes += passes
            for row in rows:
                i, rs = row.tag, region_stats[row.tag]
                rs.verified, rs.accepted_tokens, rs.forward_passes = True, row.accepted, row.forward_passes
                rs.output_tokens = len(row.output)
                tokens[i] = row.output
                reasons.append(row.stop_reason)
                outputs[i] = target.decode(row.output)
                stats.drafted_tokens += row.proposed
                stats.accepted_tokens += row.accepted
                emit(RegionVerified(page=page_number, region=i, stats=rs, text=outputs[i]))
        parts, spans, output_tokens, pos = [], [], [], 0
        for i in todo:
            text = outputs[i]
            output_tokens.extend(tokens.get(i, []))
            if not text.strip():
                continue
            if parts:
                pos += 2
            spans.append(TextSpan(region=i, start=pos, end=pos + len(text)))
            parts.append(text)
            pos += len(text)
        markdown = "\n\n".join(parts)
        stats.generated_tokens = len(output_tokens)
        # The page stopped the way its most cut-short region did (a region at the token bound first).
        stats.stop_reason = "max_new_tokens" if "max_new_tokens" in reasons else (reasons[-1] if reasons else "")
        emit(TextAppended(page=page_number, text=markdown))
        return markdown, output_tokens, spans

    def _read_elements(self, image, scale, page: "_PageRegions", chunk, notation, use_drafts, stats, seconds,
                       should_cancel) -> tuple[list[DecodeRow], int]:
        """Prefill the crops of regions ``chunk`` and decode them to the end (with their drafts where
        ``use_drafts``); returns the finished rows and the prefill's passes."""
        target, cfg = self.target, self.config
        bp = self._prefill_regions(image, scale, page.regions, chunk, seconds, should_cancel)
        rows = [DecodeRow(proposer=(PageDrafts([page.tokens[i]], [page.texts[i]], target.encode, target.decode,
                                               cfg.proposal, regions=[i], notation=notation,
                                               history=self._history).proposer
                                    if use_drafts else NoDrafts()),
                          stop=self._stop(cfg.max_new_tokens), length=bp.lengths[k],
                          rope_delta=bp.rope_deltas[k], root=int(bp.logits[k].argmax()), tag=i)
                for k, i in enumerate(chunk)]
        decoder = self._decoder(should_cancel)
        with _Timer(seconds, "verify", target.device):
            decoder.run(rows, bp.cache, bp.valid)
        stats.stage1_passes += decoder.forward_passes
        return rows, bp.passes


class _PageRegions:
    """A page's regions and what the stages keep per region, as lists they all share. Empty until
    the drafting job delivers; ``poll`` fills them in place (once), so every stage sees them."""

    def __init__(self, job: DraftJob, encode, on_drafted: Callable[[list[Region]], None]):
        self.job, self.encode, self.on_drafted = job, encode, on_drafted
        self.ready = False
        self.regions: list[Region] = []
        self.stats: list[RegionStats] = []
        self.outputs: list[str] = []      # Stage 1 text per region
        self.tokens: list[list[int]] = []  # token draft per region ([] for figures and empty text)
        self.texts: list[str] = []        # cleaned draft text per region ("" where tokens are [])

    def poll(self) -> bool:
        """Take the job's regions if it has finished; True only on the call that takes them."""
        if self.ready or not self.job.done():
            return False
        self._install(self.job.result())
        return True

    def wait(self) -> None:
        if not self.ready:
            self._install(self.job.result())

    def _install(self, regions: list[Region]) -> None:
        self.ready = True
        for r in regions:
            text = clean_draft(r.text) if r.label not in NON_TEXT_LABELS else ""
            tokens = self.encode(text) if text else []
            self.regions.append(r)
            self.stats.append(RegionStats(label=r.label, bbox=tuple(r.bbox), verified=False,
                                          drafted_tokens=len(tokens)))
            self.outputs.append("")
            self.tokens.append(tokens)
            self.texts.append(text if tokens else "")
        if regions:
            self.on_drafted(self.regions)


class _PageOutOfMemory(torch.OutOfMemoryError):
    """The page's own prefill ran out of memory (no region was in the batch yet)."""


def _zero_seconds() -> dict:
    return {"render": 0.0, "draft": 0.0, "prefill": 0.0, "verify": 0.0, "total": 0.0}


def _default_model() -> str:
    from core.targets.loader import DEFAULT_MODEL

    return DEFAULT_MODEL


def _empty_cache(device) -> None:
    if getattr(device, "type", None) == "cuda":
        torch.cuda.empty_cache()


def _native_to_markdown(target, text: str) -> str:
    """The family's output format turned into our Markdown, after decoding (``Profile.postprocess``:
    Qwen's HTML or fenced Markdown, HunyuanOCR's runaway-tail filter); the same in every mode."""
    profile = getattr(target, "profile", None)
    return profile.postprocess(text) if profile is not None else text


def _crop(image, bbox, scale: float, pad_pt: float):
    """The region's pixels: bbox (points) scaled to the rendered image, plus a margin."""
    x0, y0, x1, y1 = bbox
    box = (max(0, int((x0 - pad_pt) * scale)), max(0, int((y0 - pad_pt) * scale)),
           min(image.width, int((x1 + pad_pt) * scale + 1)), min(image.height, int((y1 + pad_pt) * scale + 1)))
    if box[2] - box[0] < 2 or box[3] - box[1] < 2:
        box = (0, 0, image.width, image.height)
    return image.crop(box)


def _origin_counts(row: DecodeRow) -> dict:
    """Output tokens accepted from each draft (region index -> count)."""
    counts: dict[int, int] = {}
    for o in row.origins:
        if o is not None:
            counts[o[0]] = counts.get(o[0], 0) + 1
    return counts


def _spans(row: DecodeRow, target) -> list[TextSpan]:
    """Character spans of the output attributed to the draft (region) they were accepted from.

    Tokens the target wrote itself inherit the attribution of the token before them."""
    owners: list[int | None] = []
    current = None
    for o in row.origins[: len(row.output)]:
        if o is not None:
            current = o[0]
        owners.append(current)
    spans: list[TextSpan] = []
    start_tok = 0
    start_char = 0
    for i in range(1, len(owners) + 1):
        if i == len(owners) or owners[i] != owners[start_tok]:
            end_char = len(target.decode(row.output[:i]))
            if end_char > start_char:
                spans.append(TextSpan(region=owners[start_tok], start=start_char, end=end_char))
            start_tok, start_char = i, end_char
    return spans


def _document_key(document):
    """What names a document for ``Engine.start_document``: its path, else the object itself."""
    path = getattr(document, "path", None)
    return str(path) if path else id(document)


def failed_page(page_number: int, width: float, height: float, mode: str, exc: BaseException) -> PageResult:
    """The result of a page that could not be converted: empty Markdown, the error recorded."""
    if isinstance(exc, torch.OutOfMemoryError):
        message = "out of GPU memory on this page; try a lower --dpi, fewer --max-new-tokens or --device cpu"
    else:
        message = str(exc) if isinstance(exc, HSDError) else f"{type(exc).__name__}: {exc}"
    return PageResult(page=page_number, width=width, height=height, markdown="", regions=[],
                      region_stats=[], region_outputs=[], spans=[], stats=PageStats(mode=mode),
                      error=message)
