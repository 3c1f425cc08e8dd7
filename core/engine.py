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
(learned notation and earlier pages' output). ``convert_page`` runs the page pipeline
(``core.page_pipeline``); ``convert_image`` builds the page's ``core.page_job.PageJob`` and hands it
to the mode's schedule in ``core.stages``. Progress goes out as events (``core.results``) through
``on_event``; ``should_cancel`` is checked between forward passes. With the target on a GPU,
``convert_page`` drafts on a thread beside the decode: the target starts at once and speculates once
the drafts arrive. docs/architecture.md draws the whole path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from core import tuning
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.elements import decode_elements
from core.errors import CancelledError, HSDError
from core.page_job import EventCallback, PageJob, joined_regions, new_page_regions
from core.page_pipeline import decode_drafted, failed_page, render_and_draft
from core.events import PageDone, PageStarted, TextAppended
from core.results import PageResult, TextSpan, page_seconds
from core.speculative.budget import PassCost
from core.speculative.decode import DecodeRow
from core.speculative.history import OutputHistory
from core.speculative.matching import ProposalConfig
from core.speculative.stopping import RepetitionGuard
from core.speculative.textmatch import Notation
from core.stages import decode_hsd, decode_page, decode_regions

MODES = ("ar", "hsd", "page", "regions")

__all__ = ["MODES", "Engine", "EngineConfig", "clean_draft", "failed_page"]


@dataclass
class EngineConfig:
    """What a conversion is asked to do; tunables not listed here live in ``core.tuning``."""

    model: str | None = None            # hub id or folder; None = core.targets.loader.DEFAULT_MODEL
    mode: str = "hsd"
    tau: float = 1.0
    drafter: str = "auto"
    dpi: int = tuning.DPI
    device: str | None = None
    dtype: str | None = None
    max_new_tokens: int = tuning.MAX_NEW_TOKENS
    trust_remote_code: bool = False
    region_pad_pt: float = tuning.REGION_PAD_PT
    stage1_batch: int = tuning.STAGE1_BATCH
    stage1_give_up: float = tuning.STAGE1_GIVE_UP
    stage1_skip_sources: tuple = ()     # hsd: drafters whose regions go to Stage 2 unrefined
    stage1_min_tokens: int = tuning.STAGE1_MIN_TOKENS
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


class Engine:
    """Converts pages. ``target`` and ``drafter`` are loaded from the config on first use unless given."""

    def __init__(self, config: EngineConfig | None = None, target=None, drafter=None,
                 pass_cost: PassCost | None = None):
        """``pass_cost``: share one target's measured pass cost between engines (the benchmark's)."""
        self.config = config or EngineConfig()
        self._target = target
        self._drafter = drafter
        self._memory: _DocumentMemory | None = None  # set by start_document
        # What a forward pass costs on this target, learned over every page this engine converts.
        self._pass_cost = (pass_cost or PassCost()) if self.config.proposal.cost_aware else None

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
        if self._memory is None or self._memory.key != key:
            self._memory = _DocumentMemory(key, self.config.proposal.max_ngram)

    @property
    def notation(self) -> Notation | None:
        """The current document's learned notation (None before ``start_document``)."""
        return self._memory.notation if self._memory is not None else None

    def remember_pages(self, document, results: Iterable[PageResult]) -> None:
        """Pages of ``document`` converted in an earlier run (a resumed conversion reuses their saved
        results) join its history as if converted now, so the pages still to do are drafted from
        them too, from the token ids they were saved with (so a resumed page is drafted exactly as in
        an uninterrupted run); pages saved without usable ids are encoded again from their Markdown,
        which only costs acceptance, never correctness."""
        self.start_document(_document_key(document))
        if self.config.mode == "ar":
            return  # no history to feed: do not encode pages for nothing
        for result in results:
            if result.error or not (result.output_tokens or result.markdown):
                continue
            tokens = result.output_tokens
            vocab = getattr(self.target, "vocab_size", None)  # stand-in targets have no fixed width
            if not tokens or (vocab is not None and max(tokens) >= vocab):
                tokens = self.target.encode(result.markdown)
            self._remember(tokens)

    def _remember(self, output_tokens: list[int]) -> None:
        """A finished page's output joins the document's history (``ar`` proposes nothing: skip)."""
        if self._memory is not None and self.config.mode != "ar":
            self._memory.history.add_page(output_tokens)

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
        """Render, draft and decode one page (``core.page_pipeline``). On a GPU the drafter runs on a
        thread beside the decode (``drafts_beside_decode``). Drafted in every mode: AR does not
        decode with the drafts, but figures and the overlay come from the regions."""
        drafter = self.drafter  # configuration errors (unknown, not installed) surface here
        drafted = render_and_draft(page, self.config.dpi, drafter, background=self.drafts_beside_decode)
        return decode_drafted(self, drafted, on_event, should_cancel)

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
        seconds = seconds if seconds is not None else page_seconds()
        t_start = time.perf_counter()
        target = self.target
        drafts = regions if isinstance(regions, DraftJob) else DraftJob.finished(regions)
        page = new_page_regions(drafts, target, page_number, emit)
        page.poll()  # drafted already: the drafts serve from the first pass on
        memory = self._memory
        job = PageJob(cfg, target, image, image.width / width, page_number, page, seconds, emit, should_cancel,
                      self._pass_cost, memory.notation if memory else None, memory.history if memory else None)
        stats = job.stats
        if getattr(getattr(target, "profile", None), "element_level", False):
            page.wait()  # the layout decides what is read
            markdown, output_tokens, spans = decode_elements(job)
            region_outputs = page.outputs
        elif cfg.mode == "regions":
            page.wait()  # Stage 1 alone has nothing to decode without the regions
            region_tokens = decode_regions(job)
            region_outputs = [target.decode(t) for t in region_tokens]
            markdown, spans = joined_regions(region_outputs)
            output_tokens = [t for toks in region_tokens for t in toks]
            stats.generated_tokens = len(output_tokens)
            emit(TextAppended(page=page_number, text=markdown))
        else:
            row = decode_hsd(job) if cfg.mode == "hsd" else decode_page(job, drafted=cfg.mode == "page")
            page.wait()  # the page may finish before its drafter: figures and the overlay need the regions
            region_outputs = page.outputs
            markdown = target.decode(row.output)
            output_tokens = row.output
            stats.tree_passes = row.stats.tree_passes
            spans = _spans(row, target)
            for region, count in _origin_counts(row).items():
                page.stats[region].page_accepted_tokens += count
            stats.generated_tokens = len(row.output)
            stats.drafted_tokens, stats.accepted_tokens = row.stats.proposed, row.stats.accepted
            stats.stop_reason = row.stop_reason

        stats.forward_passes = stats.prefill_passes + stats.stage1_passes + stats.stage2_passes
        finished = _native_to_markdown(target, markdown)
        if finished != markdown:  # the family's native format, converted: the spans no longer fit
            markdown, spans = finished, []
        self._remember(output_tokens)
        seconds["total"] = seconds.get("total", 0.0) + time.perf_counter() - t_start
        stats.seconds = seconds
        return PageResult(page=page_number, width=width, height=height, markdown=markdown,
                          regions=page.regions, region_stats=page.stats, region_outputs=region_outputs,
                          spans=spans, stats=stats, output_tokens=list(output_tokens))


class _DocumentMemory:
    """What pages of one document teach the next: the learned notation and the earlier output."""

    def __init__(self, key, max_ngram: int):
        self.key = key
        self.notation = Notation()
        self.history = OutputHistory(max_ngram)


def _default_model() -> str:
    from core.targets.loader import DEFAULT_MODEL

    return DEFAULT_MODEL


def _native_to_markdown(target, text: str) -> str:
    """The family's output format turned into our Markdown, after decoding (``Profile.postprocess``:
    Qwen's HTML or fenced Markdown, HunyuanOCR's runaway-tail filter); the same in every mode."""
    profile = getattr(target, "profile", None)
    return profile.postprocess(text) if profile is not None else text


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
