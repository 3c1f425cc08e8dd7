"""A page before its decode, written once: render it, draft it, time both; and the record of a page
that failed. The document run (``core.run``, through its drafting thread ``core.draft_ahead``; on
one machine, on Ray and in the benchmark) and the benchmark's first drafting (``core.bench.runner``)
prepare pages here; a ``DraftedPage`` is the record a page decoder (``Engine.decode_image``) takes.
Nothing here calls the engine.

    render(page, dpi)                                  ->  (image, seconds)   PyMuPDF, timed; in
                                                                              the rendering process
                                                                              beside a drafting one
                                                                              (RENDER_PROCESS, on)
    render_and_draft(page, dpi, drafter, background)   ->  DraftedPage        the drafter now, or on
                                                                              a thread of its own
    PendingDrafts                                      a page's drafts handed to the decode before
                                                       its drafter is done; ``end_decode`` tells
                                                       the drafting side the decode no longer
                                                       needs their text
    failed_page(...)                                   ->  PageResult         empty, error recorded

A drafter crash costs speed, never the page (``core.drafters.background.DraftJob``): the page is
decoded without drafts and ``PageStats.draft_error`` says why. PyMuPDF is not thread-safe: a
document's pages are rendered and drafted by one thread at a time (``render_and_draft`` renders
before its drafter starts; ``core.draft_ahead`` keeps the whole document on its own thread).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from core.drafters.background import DraftJob
from core.drafters.base import OcrLine, Region
from core.errors import HSDError
from core.results import PageResult, PageStats, page_seconds


@dataclass
class DraftedPage:
    """A rendered page and its drafting (finished, or still running). ``seconds``: render, and
    draft where the drafter ran first. ``error``: the page could not be loaded or rendered (it is
    recorded as failed without decoding)."""

    number: int                    # 1-based
    width: float                   # points
    height: float
    image: object                  # PIL image at the configured DPI (None where ``error``)
    drafts: object                 # a ``core.page_job.Drafting``: DraftJob or PendingDrafts
    seconds: dict = field(default_factory=page_seconds)
    error: str | None = None


def render(page, dpi: int) -> tuple[object, dict]:
    """``page`` (a ``core.documents.Page``) rendered at ``dpi``, and its ``seconds`` record: in the
    rendering process where one renders the page's document (``core.drafters.render_process``),
    the same pixels and turn as here."""
    from core.drafters.render_process import renderer_of

    t0 = time.perf_counter()
    # beside a drafting process: rendered (and turned) there, but for a document's first page
    renderer = renderer_of(getattr(page, "document", None), getattr(page, "index", None))
    image = renderer.render(page, dpi) if renderer is not None else page.render(dpi)
    return image, page_seconds(render=time.perf_counter() - t0)


def render_and_draft(page, dpi: int, drafter, background: bool = False) -> DraftedPage:
    """Render ``page`` at ``dpi`` and start drafting it: on a thread of its own where
    ``background``, else now."""
    image, seconds = render(page, dpi)
    job = DraftJob(drafter, page, background=background)
    if not background:
        seconds["draft"] = job.seconds
    return DraftedPage(page.number, page.width, page.height, image, job, seconds)


class PendingDrafts:
    """A page's drafts handed to the decode before its drafter has finished: ``done``, ``result``,
    ``error`` and ``seconds`` as a ``DraftJob``'s once ``deliver`` hands it over (the drafting
    thread, after it has announced the regions, so that no event about a region comes first).
    ``lines``: the job's ``lines`` (``early_lines``), filled while it drafts.

    ``end_decode()`` (the run's saving side, ``core.run.PageSaver``, on the decode's thread) says
    the page's decode ended before its drafts were delivered: their text can no longer save a
    pass, only the saved result's layout (figures, the overlay) needs them. A drafter that has
    not started the page yet then reads only its layout (``decode_ended``; ``core.draft_ahead``)."""

    def __init__(self):
        self._job: DraftJob | None = None
        self._delivered = threading.Event()
        self._decode_ended = threading.Event()
        self.lines: list[OcrLine] = []

    def end_decode(self) -> None:
        """The page's decode has ended (whether or not its drafts were delivered)."""
        self._decode_ended.set()

    def decode_ended(self) -> bool:
        return self._decode_ended.is_set()

    def early_lines(self) -> list[OcrLine]:
        return self.lines

    def deliver(self, job: DraftJob) -> None:
        self._job = job
        self._delivered.set()

    def done(self) -> bool:
        return self._delivered.is_set()

    def result(self) -> list[Region]:
        self._delivered.wait()
        return self._job.result()

    @property
    def error(self) -> str | None:
        return self._job.error if self._job is not None else None

    @property
    def seconds(self) -> float:
        return self._job.seconds if self._job is not None else 0.0


def drafter_name(drafter, page) -> str:
    """The name of the drafter that reads ``page``: ``auto`` says which of its drafters it chose."""
    try:
        return drafter.choose(page).name
    except Exception:  # the page cannot say: its drafting will meet (and record) the same
        return drafter.name


def page_error(exc: BaseException) -> str:
    """One line for a page that could not be converted: the user's error as it is, a bug named."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return "out of GPU memory on this page; try a lower --dpi, fewer --max-new-tokens or --device cpu"
    return str(exc) if isinstance(exc, HSDError) else f"{type(exc).__name__}: {exc}"


def failed_page(page_number: int, width: float, height: float, mode: str, error: str) -> PageResult:
    """The result of a page that could not be converted: empty Markdown, ``error`` recorded
    (``page_error``)."""
    return PageResult(page=page_number, width=width, height=height, markdown="", regions=[],
                      region_stats=[], region_outputs=[], spans=[], stats=PageStats(mode=mode),
                      error=error)
