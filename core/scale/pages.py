"""One page as two work units, so that rendering and drafting (CPU) run apart from decoding (GPU).

They are the single-machine page's two halves: ``render_and_draft`` runs the page pipeline's
``render_and_draft`` (``core.page_pipeline``; drafter first, never on a thread) on a CPU worker and
packs the result for the trip; ``convert_rendered`` unpacks it on a model actor and decodes it with
``Engine.convert_image``, what a run on one machine does in two steps (``core.run.start_page``:
``Engine.decode_image``, then ``DecodedPage.finish``), so the Markdown is the single path's for the
same settings. Both retry a failing page before giving up; a page that still fails becomes
``failed_page(...)`` as on one machine.

No Ray in this module: it is the unit that Ray workers run, testable without Ray.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

from core import page_pipeline, tuning
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.errors import DrafterUnavailableError
from core.results import FIGURE_LABELS, PageResult


@dataclass
class RenderedPage:
    """What a CPU worker hands a model actor: the rendered page, its regions and timings.

    ``error`` is set when the page could not be loaded or rendered (after retries); the model actor
    then records it as failed without decoding.
    """

    doc: int
    index: int                       # 0-based page index in the document
    width: float = 0.0               # points
    height: float = 0.0
    image_size: tuple[int, int] = (0, 0)
    image_mode: str = "RGB"
    image_bytes: bytes = b""
    regions: list[Region] = field(default_factory=list)
    seconds: dict = field(default_factory=dict)
    draft_error: str | None = None
    error: str | None = None
    fatal: str | None = None         # the run cannot go on (the drafter cannot run at all)
    attempts: int = 1

    @property
    def number(self) -> int:
        return self.index + 1

    def image(self):
        from PIL import Image

        return Image.frombytes(self.image_mode, self.image_size, self.image_bytes)

    def dumps(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def loads(data: bytes) -> "RenderedPage":
        return pickle.loads(data)


# --- CPU side: render + draft --------------------------------------------------------------------

_DOCS: dict[str, object] = {}     # per worker process: the last document opened (pages of one
_DRAFTERS: dict[str, object] = {}  # document usually arrive together) and one drafter per name


def _document(path: str, password: str | None, rotate: str = "off"):
    from core.documents import open_document

    doc = _DOCS.get(path)
    if doc is not None and doc.rotate != rotate:
        doc = None
    if doc is None:
        for old in _DOCS.values():
            old.close()
        _DOCS.clear()
        doc = _DOCS[path] = open_document(path, password=password, rotate=rotate)
    return doc


def _drafter(name: str):
    if name not in _DRAFTERS:
        from core.drafters import get_drafter

        _DRAFTERS[name] = get_drafter(name)
    return _DRAFTERS[name]


def render_and_draft(doc: int, path: str, index: int, dpi: int, drafter: str,
                     password: str | None = None, retries: int | None = None, rotate: str = "off") -> RenderedPage:
    """Render page ``index`` of ``path`` at ``dpi`` and draft it, as a run on one machine does
    (``retries`` further attempts after an error; default ``tuning.RAY_RETRIES``; ``rotate``: the
    conversion's, ``EngineConfig.rotate``)."""
    retries = tuning.RAY_RETRIES if retries is None else retries
    error = None
    for attempt in range(1, retries + 2):
        try:
            page = _document(path, password, rotate).page(index)
            drafted = page_pipeline.render_and_draft(page, dpi, _drafter(drafter), background=False)
            image = drafted.image
            return RenderedPage(doc=doc, index=index, width=page.width, height=page.height,
                                image_size=image.size, image_mode=image.mode, image_bytes=image.tobytes(),
                                regions=drafted.drafts.result(), seconds=drafted.seconds,
                                draft_error=drafted.drafts.error, attempts=attempt)
        except DrafterUnavailableError as exc:
            # the job's error, not each page's (as in convert); returned, not raised, because Ray
            # hands exceptions back to the driver as text only
            return RenderedPage(doc=doc, index=index, fatal=str(exc))
        except Exception as exc:
            error = exc
            stale = _DOCS.pop(path, None)  # reopen on the next attempt
            if stale is not None:
                stale.close()
    return RenderedPage(doc=doc, index=index, error=page_pipeline.page_error(error), attempts=retries + 1)


# --- model side: decode --------------------------------------------------------------------------


def convert_rendered(engine, page: RenderedPage, retries: int | None = None) -> PageResult:
    """Decode one rendered page with ``engine`` (a ``core.engine.Engine``), retrying on errors.

    The result carries ``page_image`` only when the page has figure regions (the writer crops them);
    a page that fails every attempt is ``failed_page(...)`` with the last error. Its drafts were
    done before it arrived: ``passes_before_drafts`` is 0, and its total seconds are the decode's
    (its render and drafting ran on another worker, ahead of it). ``retries``: default
    ``tuning.RAY_RETRIES``."""
    retries = tuning.RAY_RETRIES if retries is None else retries
    mode = engine.config.mode
    if page.error is not None:
        return page_pipeline.failed_page(page.number, page.width, page.height, mode, page.error)
    image = page.image()
    error: BaseException | None = None
    for _ in range(retries + 1):
        drafts = DraftJob.finished(page.regions, page.draft_error, page.seconds.get("draft", 0.0))
        try:
            result = engine.convert_image(image, drafts, page.width, page.height, page.number,
                                          seconds=dict(page.seconds, total=0.0))
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            error = exc
            _free_memory()
            continue
        if any(r.label in FIGURE_LABELS for r in result.regions):
            result.page_image = image  # the driver crops the figures from it
        return result
    return page_pipeline.failed_page(page.number, page.width, page.height, mode, page_pipeline.page_error(error))


def _free_memory() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass


__all__ = ["RenderedPage", "render_and_draft", "convert_rendered"]
