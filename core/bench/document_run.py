"""A benchmark document converted by one method as ``hsd convert`` converts it: one document run.

``core.run`` converts the document (its drafting thread renders and drafts the pages ahead of the
decode, the decode takes them in order, every page is saved); a page's wall-clock is the run's
seconds from the end of the page before (or the run's start) to the end of its own, so a method's
pages add up to its end-to-end seconds, drafting included wherever the decode waited for it.

The run's page decoder, ``ReplayDecoder``, is the engine's decode with the replay target first told
the page's reference, its regions' and those of the OCR lines the drafter tells before its regions
(``line_references``; ``ReplayTarget.set_page``): the references come from the drafts the
benchmark made first (``core.bench.runner``). The run's drafter reads the pages again as a user's
run would, each page's record saying whether it found the same regions (``same_regions``), or hands
over drafts computed beforehand at once (``FixedDrafts``: the drafts made first, an oracle
method's, none for ``ar``).

    run_document(pdf, engine config, target, drafter, references, ...)  ->  DocumentMeasure
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.bench.corpus import region_spans
from core.bench.replay import ReplayTarget
from core.drafters.base import DrafterBase, Region, as_ocr_lines
from core.engine import DecodedPage, Engine, EngineConfig
from core.events import DocumentDone, PageDone, PageSaved, RegionsDrafted
from core.page_pipeline import DraftedPage
from core.results import PageResult
from core.speculative.budget import PassCost


@dataclass(frozen=True)
class PageReference:
    """What the replay target reads a page as: the page's reference, each region's, and each early
    OCR line's (``line_references``)."""

    page: str
    regions: list[str]
    lines: list[str] = field(default_factory=list)


@dataclass
class PageMeasure:
    """One page of a document run: its result, the decode thread's CPU seconds and the simulated
    GPU's seconds while it decoded, its Stage 2 gains (``ReplayTarget.gains``), the regions the
    run's drafter found, and its wall-clock (see the module docstring)."""

    result: PageResult | None = None
    cpu_seconds: float = 0.0
    gpu_seconds: float | None = None
    gains: list[int] = field(default_factory=list)
    regions: list[Region] | None = None
    wall_seconds: float = 0.0


@dataclass
class DocumentMeasure:
    """A method's document run: page number -> its measure, and the run's end-to-end seconds."""

    pages: dict[int, PageMeasure]
    seconds: float


class FixedDrafts(DrafterBase):
    """Drafts computed beforehand: page number -> regions, returned at once (``FixedDrafts({})``:
    none, for a method that reads no drafts, ``ar``)."""

    name = "fixed"

    def __init__(self, regions: dict[int, list[Region]]):
        self.regions = regions

    def draft(self, page) -> list[Region]:
        return list(self.regions.get(page.number, []))


def line_references(reference: str, lines) -> list[str]:
    """What a reader as accurate as ``reference`` writes for each early OCR line with a box
    (``lines``: as the drafter told them; in the order ``core.page_job.PageRegions.lines`` keeps):
    the stretch of the reference its text matches (``region_spans``, markup around it included),
    "" where it matches none (a stack of a paragraph's lines, ``core.drafters.base.stack_lines``:
    the stretch its joined text matches). Unlike a region, an unmatched line takes no unmatched
    stretch of the page: a line's crop holds its own line or lines only."""
    boxed = [Region("text", tuple(line.bbox), line.text, "ocr-line") for line in as_ocr_lines(lines)
             if line.croppable]
    return ["" if span is None else reference[span[0]:span[1]].strip() for span in region_spans(reference, boxed)]


class ReplayDecoder:
    """The benchmark's ``core.run.PageDecoder``: ``engine``'s own decode, its replay target first
    told the page's reference, its regions' and its early lines' (``references``: page number ->
    ``PageReference``) as the run's decode reaches the page; every page it decodes is measured
    (``pages``). The rest (drafter, loading, history) is the engine's."""

    def __init__(self, engine: Engine, references: dict[int, PageReference]):
        self.engine, self.references = engine, references
        self.config = engine.config
        self.pages: dict[int, PageMeasure] = {}

    @property
    def drafter(self):
        return self.engine.drafter

    @property
    def pages_ahead(self) -> int:
        return self.engine.pages_ahead

    @property
    def loaded(self) -> bool:
        return self.engine.loaded

    def prepare(self) -> float:
        return self.engine.prepare()

    def remember_pages(self, key, results) -> None:
        self.engine.remember_pages(key, results)

    def decode_image(self, page: DraftedPage, on_event=None, should_cancel=None) -> DecodedPage:
        reference = self.references.get(page.number, PageReference("", []))
        target = self.engine.target
        target.set_page(reference.page, reference.regions, reference.lines)
        measure = self.pages.setdefault(page.number, PageMeasure())
        cpu0, gpu0 = time.thread_time(), target.device_seconds
        decoded = self.engine.decode_image(page, on_event, should_cancel)
        # measured where the decode ends: the run may decode the next page while this one waits
        # for its regions (``core.run.PageSaver``), and its result comes with its ``PageDone``
        measure.cpu_seconds = time.thread_time() - cpu0
        if gpu0 is not None:
            measure.gpu_seconds = target.device_seconds - gpu0
        kind = "region" if self.config.mode == "regions" else "page"
        measure.gains = target.gains(kind, final=len(decoded.page.tokens) if kind == "page" else None)
        return decoded


def run_document(pdf: Path, config: EngineConfig, target: ReplayTarget, drafter,
                 references: dict[int, PageReference], pages: str | None = None,
                 pass_cost: PassCost | None = None) -> DocumentMeasure:
    """Convert pages ``pages`` (a range such as ``1-4``; None: all) of ``pdf`` in one document run
    under ``config`` on ``target`` with ``drafter`` (module docstring). The Markdown is written to a
    temporary folder and dropped."""
    from core.run import ConversionRequest, convert_document

    decoder = ReplayDecoder(Engine(config, target=target, drafter=drafter, pass_cost=pass_cost), references)
    with tempfile.TemporaryDirectory(prefix="hsd-bench-run-") as out:
        request = ConversionRequest(input=Path(pdf), output=Path(out) / "out.md", config=config, pages=pages,
                                    fresh=True)
        drafted: dict[int, list[Region]] = {}
        walls: dict[int, float] = {}
        t0 = last = time.perf_counter()
        with convert_document(request, decoder) as run:
            for event in run:
                if isinstance(event, RegionsDrafted):
                    drafted[event.page] = list(event.regions)
                elif isinstance(event, PageDone):
                    now = time.perf_counter()
                    walls[event.page], last = now - last, now
                    decoder.pages.setdefault(event.page, PageMeasure()).result = event.result
                elif isinstance(event, PageSaved):  # done before its regions came: with them now
                    decoder.pages[event.page].result = event.result
                elif isinstance(event, DocumentDone):
                    break
        seconds = time.perf_counter() - t0
    for number, measure in decoder.pages.items():
        measure.wall_seconds = walls.get(number, 0.0)
        measure.regions = drafted.get(number)
    return DocumentMeasure(decoder.pages, seconds)
