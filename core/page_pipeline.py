"""One page from the document to its result, written once: render, draft, decode, time, and the
record of a page that failed. ``Engine.convert_page`` (``hsd convert``, the app), the Ray workers
(``core.scale.pages``) and the benchmark (``core.bench.runner``) all run these steps.

    render_and_draft(page, dpi, drafter, background)  ->  DraftedPage   (render timed; the drafter
                                                                         runs now, or on a thread)
    decode_drafted(engine, drafted, ...)               ->  PageResult    (decode; seconds; drafter
                                                                         error; the page image)
    failed_page(...)                                   ->  PageResult    (empty, error recorded)

A drafter crash costs speed, never the page (``core.drafters.background.DraftJob``): the page is
decoded without drafts and ``PageStats.draft_error`` says why. The rendered image is made before the
drafter starts, so that only the drafter touches the PDF while it runs (PyMuPDF is not thread-safe).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from core.drafters.background import DraftJob
from core.errors import HSDError
from core.results import PageResult, PageStats, page_seconds


@dataclass
class DraftedPage:
    """A rendered page and its drafting job (finished, or running beside the decode).

    ``lead_seconds``: wall-clock from the start of the render to the moment the decode may start
    (render, plus the drafter where it ran first); the page's total adds the decode to it."""

    number: int                    # 1-based
    width: float                   # points
    height: float
    image: object                  # PIL image at the configured DPI
    drafts: DraftJob
    seconds: dict = field(default_factory=page_seconds)
    lead_seconds: float = 0.0


def render_and_draft(page, dpi: int, drafter, background: bool = False) -> DraftedPage:
    """Render ``page`` (a ``core.documents.Page``) at ``dpi`` and start drafting it: on a thread
    beside the decode where ``background``, else now."""
    t0 = time.perf_counter()
    image = page.render(dpi)
    seconds = page_seconds(render=time.perf_counter() - t0)
    job = DraftJob(drafter, page, background=background)
    if not background:
        seconds["draft"] = job.seconds
    return DraftedPage(page.number, page.width, page.height, image, job, seconds,
                       lead_seconds=time.perf_counter() - t0)


def decode_drafted(engine, drafted: DraftedPage, on_event: Callable[[object], None] | None = None,
                   should_cancel: Callable[[], bool] | None = None) -> PageResult:
    """Decode a drafted page with ``engine`` (``Engine.convert_image``). The drafter is waited for
    before this returns, also when the decode raises (no drafter outlives its page)."""
    seconds = page_seconds(render=drafted.seconds.get("render", 0.0))
    t0 = time.perf_counter()
    try:
        result = engine.convert_image(drafted.image, drafted.drafts, drafted.width, drafted.height,
                                      drafted.number, on_event=on_event, should_cancel=should_cancel,
                                      seconds=seconds)
    finally:
        drafted.drafts.result()
    result.stats.seconds["draft"] = drafted.drafts.seconds  # beside the decode: overlapped, not added
    result.stats.seconds["total"] = drafted.lead_seconds + time.perf_counter() - t0
    result.stats.draft_error = drafted.drafts.error
    result.page_image = drafted.image
    return result


def failed_page(page_number: int, width: float, height: float, mode: str, exc: BaseException) -> PageResult:
    """The result of a page that could not be converted: empty Markdown, the error recorded."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        message = "out of GPU memory on this page; try a lower --dpi, fewer --max-new-tokens or --device cpu"
    else:
        message = str(exc) if isinstance(exc, HSDError) else f"{type(exc).__name__}: {exc}"
    return PageResult(page=page_number, width=width, height=height, markdown="", regions=[],
                      region_stats=[], region_outputs=[], spans=[], stats=PageStats(mode=mode),
                      error=message)
