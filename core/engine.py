"""The conversion engine: Stage 1 (regions), Stage 2 (page) and the baselines.

Modes (``EngineConfig.mode``):

* ``ar``      plain greedy decoding of the page with a KV cache: the baseline and the reference output.
* ``hsd``     Stage 2 decodes the whole page from the first pass on; beside it, in the same batched
              forward passes, Stage 1 verifies each region's draft on its crop, and every finished
              region's refined text becomes a Stage 2 draft. The page-level output is returned, so at
              ``tau = 1`` it equals ``ar`` token for token (the page row is prefilled alone).
* ``page``    Stage 2 only, drafts = the drafter's raw region texts (prompt-lookup style baseline).
* ``regions`` Stage 1 only, region outputs concatenated (region-parallel baseline; not lossless).

The engine holds the target, the drafter, the measured pass cost and the current document's memory
(learned notation and earlier pages' output). ``decode_image`` decodes one rendered page (a
``core.page_pipeline.DraftedPage`` record): it builds the page's ``core.page_job.PageJob``, hands it
to the mode's schedule (``schedule``: ``core.stage1``, ``core.stages``, or ``core.elements`` for
families that read a page element by element); ``DecodedPage.finish`` turns the ``PageDecode``
record that comes back into the page's result. Progress goes out as events (``core.events``)
through ``on_event``; ``should_cancel`` is checked between forward passes. A document's pages reach
the engine through ``core.run``, for which the engine is the local ``PageDecoder`` (docs/architecture.md
draws the whole path).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from core import tuning
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.elements import decode_elements
from core.errors import HSDError
from core.page_job import DocumentMemory, Drafting, EventCallback, PageDecode, PageImage, PageJob, PageRegions
from core.page_pipeline import DraftedPage
from core.results import PageResult, page_seconds
from core.speculative.budget import PassCost
from core.speculative.proposal_config import ProposalConfig
from core.speculative.stopping import RepetitionGuard
from core.speculative.notation import Notation
from core.stage1 import decode_hsd, decode_regions
from core.stages import decode_page, page_row_decode

MODES = ("ar", "hsd", "page", "regions")

__all__ = ["MODES", "DecodedPage", "Engine", "EngineConfig", "schedule"]


@dataclass
class EngineConfig:
    """What a conversion is asked to do; tunables not listed here live in ``core.tuning``."""

    model: str | None = None            # hub id or folder; None = tuning.DEFAULT_MODEL
    mode: str = tuning.DEFAULT_MODE
    tau: float = tuning.DEFAULT_TAU
    drafter: str = tuning.DEFAULT_DRAFTER
    dpi: int = tuning.DPI
    device: str | None = None
    dtype: str | None = None
    max_gpu_memory: object = None       # a core.hardware.MemoryCap: load and decode within it (None: no cap)
    engine: str = tuning.DEFAULT_ENGINE  # "eager" or "fast" (core.targets.fast_pass)
    max_new_tokens: int = tuning.MAX_NEW_TOKENS
    trust_remote_code: bool = False
    region_pad_pt: float = tuning.REGION_PAD_PT
    stage1_batch: int = tuning.STAGE1_BATCH
    stage1_give_up: float = tuning.STAGE1_GIVE_UP
    stage1_skip_sources: tuple = ()     # hsd: drafters whose regions go to Stage 2 unrefined
    stage1_min_tokens: int = tuning.STAGE1_MIN_TOKENS
    # draft pages on a thread ahead of and beside the decode: on, off, or auto (on where the target
    # is not on the CPU; see drafts_beside_decode)
    background_drafting: str = tuning.DEFAULT_BACKGROUND_DRAFTING
    # "auto": a page whose text runs sideways or upside down is turned upright for the model and the
    # drafter (``core.documents.Page.turn``), the same image in every mode; "off": never
    rotate: str = tuning.DEFAULT_ROTATE
    repetition: RepetitionGuard = field(default_factory=RepetitionGuard)
    proposal: ProposalConfig = field(default_factory=ProposalConfig)

    def __post_init__(self):
        if self.mode not in MODES:
            raise HSDError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if not 0.0 < self.tau <= 1.0:
            raise HSDError(f"tau must be in (0, 1], got {self.tau}")
        if self.max_new_tokens < 1:
            raise HSDError("max-new-tokens must be at least 1")
        if self.engine not in ("eager", "fast"):
            raise HSDError(f"engine must be eager or fast, got {self.engine!r}")
        if self.rotate not in ("auto", "off"):
            raise HSDError(f"rotate must be auto or off, got {self.rotate!r}")
        if self.background_drafting not in ("auto", "on", "off"):
            raise HSDError(f"background drafting must be auto, on or off, got {self.background_drafting!r}")


class Engine:
    """Converts pages. ``target`` and ``drafter`` are loaded from the config on first use unless
    given, so an engine is cheap to build."""

    def __init__(self, config: EngineConfig | None = None, target=None, drafter=None,
                 pass_cost: PassCost | None = None):
        """``pass_cost``: share one target's measured pass cost between engines (the benchmark's)."""
        self.config = config or EngineConfig()
        self._target = target
        self._drafter = drafter
        self._memory: DocumentMemory | None = None  # set by start_document
        # What a forward pass costs on this target, learned over every page this engine converts.
        self._pass_cost = (pass_cost or PassCost()) if self.config.proposal.cost_aware else None

    @property
    def target(self):
        if self._target is None:
            from core.targets.loader import load_target

            c = self.config
            self._target = load_target(c.model or default_model(), device=c.device, dtype=c.dtype,
                                       trust_remote_code=c.trust_remote_code,
                                       **({"max_gpu_memory": c.max_gpu_memory} if c.max_gpu_memory else {}),
                                       **({"engine": c.engine} if c.engine != "eager" else {}))
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

    def prepare(self) -> float:
        """Load the target and build the drafter now (raises ModelLoadError, DrafterUnavailableError).
        Returns the seconds of loading spent compiling the fast engine's passes (0: eager)."""
        from core.targets.fast_pass import fast_passes_of

        _ = self.target, self.drafter
        fast = fast_passes_of(self._target)
        return fast.compile_seconds if fast is not None else 0.0

    @property
    def drafts_beside_decode(self) -> bool:
        """Whether pages are drafted on a thread ahead of and beside the decode (``core.run``), or
        each page's drafter runs first, while nothing decodes. ``auto``: where the target runs on a
        GPU, whose passes leave the CPU to the drafter. On a CPU both need the same cores: on two,
        drafting beside the tiny model's decode made scans 1.5x slower than drafting first
        (oversubscribed threads), so there the drafter goes first. Known before the model loads."""
        mode = self.config.background_drafting
        if mode == "auto":
            return self._device().type != "cpu"
        return mode == "on"

    @property
    def pages_ahead(self) -> int:
        """Pages a document run drafts ahead of the one decoding (``core.run.PageDecoder``):
        ``tuning.DRAFT_AHEAD_PAGES`` where they are drafted beside the decode, else 0."""
        return tuning.DRAFT_AHEAD_PAGES if self.drafts_beside_decode else 0

    def _device(self):
        if self._target is not None:
            return self._target.device
        from core.targets.loader import pick_device

        return pick_device(self.config.device)

    # -- documents --------------------------------------------------------------------------------

    def start_document(self, key) -> None:
        """Pages converted from now on share one learned notation (``Notation``): how the model
        wrote the drafts' words and numbers on one page (``$8 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$``
        for ``8 wt%TiO2``) is proposed on the next. ``key`` names the document (its path): starting
        the same document again keeps what was learned, another one starts afresh. Without a
        document, each page learns alone. The earlier pages' output is a draft for the later ones
        too (``OutputHistory``): a manual's tables repeat their rules and rows, a report its headers."""
        if self._memory is None or self._memory.key != key:
            self._memory = DocumentMemory.new(key, self.config.proposal.max_ngram)

    @property
    def notation(self) -> Notation | None:
        """The current document's learned notation (None before ``start_document``)."""
        return self._memory.notation if self._memory is not None else None

    def remember_pages(self, key, results: Iterable[PageResult]) -> None:
        """Pages of document ``key`` converted in an earlier run (a resumed conversion reuses their
        saved results) join its history as if converted now, so the pages still to do are drafted
        from them too, from the token ids they were saved with (so a resumed page is drafted exactly
        as in an uninterrupted run); pages saved without usable ids are encoded again from their
        Markdown, which only costs acceptance, never correctness."""
        self.start_document(key)
        if self.config.mode == "ar":
            return  # no history to feed: do not encode pages for nothing
        for result in results:
            if result.error or not (result.output_tokens or result.markdown):
                continue
            tokens = result.output_tokens
            vocab = self.target.vocab_size  # None: a stand-in whose ids have no fixed bound
            if not tokens or (vocab is not None and max(tokens) >= vocab):
                tokens = self.target.encode(result.markdown)
            self._remember(tokens)

    def _remember(self, output_tokens: list[int]) -> None:
        """A finished page's output joins the document's history (``ar`` proposes nothing: skip)."""
        if self._memory is not None and self.config.mode != "ar":
            self._memory.history.add_page(output_tokens)

    # -- one page image ---------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the target is loaded (``prepare`` loads it): a document run says so first."""
        return self._target is not None

    def convert_image(self, image, regions: "list[Region] | Drafting", width: float, height: float,
                      page_number: int = 1, on_event: EventCallback | None = None,
                      should_cancel: Callable[[], bool] | None = None,
                      seconds: dict | None = None) -> PageResult:
        """Convert one rendered page given by its parts (a single image, a test's page): ``regions``
        carry bboxes in points of a ``width`` x ``height`` page; ``image`` may be rendered at any
        scale. ``regions`` may also be a drafting still running (``core.page_job.Drafting``): ``hsd``
        and ``page`` then decode without drafts until it delivers, and the page's statistics say
        after how many passes it did. ``seconds``: the page's timings so far (render, draft); its
        ``total`` grows by this decode. The drafter is waited for before this returns, also when the
        decode raises. A page that arrives as a record goes to ``decode_image``."""
        page = DraftedPage(page_number, width, height, image, regions,
                           seconds if seconds is not None else page_seconds())
        return self.decode_image(page, on_event, should_cancel).finish()

    def decode_image(self, page: DraftedPage, on_event: EventCallback | None = None,
                     should_cancel: Callable[[], bool] | None = None) -> "DecodedPage":
        """Decode ``page`` (its image, its drafts done or still coming, its size in points and its
        timings so far) up to the end of its decode: the page's output is final and joins the
        document's history, while its drafter may still be reading it (a decode that ended before
        its regions came). ``DecodedPage.finish`` waits for them and makes the result, so that a
        document run can decode its next page meanwhile (``core.run``). ``page.seconds`` grows by
        this decode (the caller hands a copy where it keeps its own)."""
        t_start = time.perf_counter()
        target, image, regions = self.target, page.image, page.drafts
        drafting = DraftJob.finished(list(regions)) if isinstance(regions, (list, tuple)) else regions
        job = PageJob(self.config, target, PageImage(image, image.width / page.width, page.number),
                      PageRegions(drafting, target.encode), memory=self._memory, pass_cost=self._pass_cost,
                      emit=on_event, should_cancel=should_cancel, seconds=page.seconds)
        try:
            job.regions.poll(0)  # drafted already: the drafts serve from the first pass on
            decoded = schedule(job)
        except BaseException:
            drafting.result()  # no drafter outlives its page's decode unseen
            raise
        self._remember(decoded.tokens)
        return DecodedPage(job, drafting, decoded, page.width, page.height, t_start)


@dataclass
class DecodedPage:
    """A page whose decode has ended (``Engine.decode_image``). ``drafted()``: whether its drafter
    has delivered; ``finish()`` waits for it (its regions make the overlay, its figures are cut
    from them) and returns the page's result (the same one however often it is asked);
    ``result_so_far()`` is the page's result now, without waiting: the decode's output is final,
    and a drafter still reading the page has not given its regions yet (none in the result; a
    document run hands it on at once and saves ``finish()``'s once they come)."""

    job: PageJob
    drafting: Drafting
    page: PageDecode
    width: float
    height: float
    t_start: float
    _result: PageResult | None = field(default=None, repr=False)

    def drafted(self) -> bool:
        return self.drafting.done()

    def finish(self) -> PageResult:
        if self._result is None:
            self.drafting.result()
            stats = self.job.stats
            self.job.regions.wait(stats.stage1_passes + stats.stage2_passes)  # figures and the overlay need them
            self._result = self._page_result(self.job.stats, self.job.seconds)
        return self._result

    def result_so_far(self) -> PageResult:
        if self._result is not None or self.drafted():
            return self.finish()
        # copies: ``finish`` fills the page's own records once the regions come
        return self._page_result(replace(self.job.stats), dict(self.job.seconds))

    def _page_result(self, stats, seconds: dict) -> PageResult:
        """The result from the decode and the regions taken in so far (none where they have not
        come: every pass then came before them)."""
        job, drafting, page = self.job, self.drafting, self.page
        stats.generated_tokens = len(page.tokens)
        stats.forward_passes = stats.prefill_passes + stats.stage1_passes + stats.stage2_passes
        passes = stats.stage1_passes + stats.stage2_passes
        arrived = job.regions.arrived_after if job.regions.ready else passes
        # ar reads no drafts: however late its drafter answered, no pass waited for it
        stats.passes_before_drafts = arrived if job.config.mode != "ar" else 0
        lines_after = job.regions.lines_after  # None: no lines came before the regions
        stats.passes_before_lines = (stats.passes_before_drafts if lines_after is None
                                     else min(lines_after, stats.passes_before_drafts))
        stats.draft_error = drafting.error
        markdown, spans = page.text, page.spans
        profile = job.target.profile
        if profile is not None:  # the family's format (Qwen's HTML, HunyuanOCR's runaway tail...)
            markdown = profile.postprocess(markdown)  # as our Markdown, in every mode
            if markdown != page.text:
                spans = []  # converted: the spans no longer fit
        seconds["draft"] = drafting.seconds
        seconds["total"] = seconds.get("total", 0.0) + time.perf_counter() - self.t_start
        stats.seconds = seconds
        return PageResult(page=job.page.number, width=self.width, height=self.height, markdown=markdown,
                          regions=job.regions.regions, region_stats=job.regions.stats,
                          region_outputs=job.regions.outputs, spans=spans, stats=stats,
                          output_tokens=list(page.tokens))


def schedule(job: PageJob) -> PageDecode:
    """Decode ``job``'s page with the schedule of its mode, each straight from the module that holds
    it: ``hsd`` both stages and ``regions`` Stage 1 alone (``core.stage1``), ``ar`` and ``page`` the
    page row alone (``core.stages``); families that read a page element by element, region by region
    (``core.elements``)."""
    profile, mode = job.target.profile, job.config.mode
    if profile is not None and profile.element_level:
        return decode_elements(job)
    if mode == "regions":
        return decode_regions(job)
    row = decode_hsd(job) if mode == "hsd" else decode_page(job, drafted=mode == "page")
    return page_row_decode(job, row)


def default_model() -> str:
    return tuning.DEFAULT_MODEL
