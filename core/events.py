"""What a document run tells its caller, in the order it happens: typed events.

The CLI's progress line, the app's panes, Ray's driver and the benchmark all read one stream of
these. A conversion of one document yields, in order:

    DocumentPlanned                     once: the pages of this run, those kept from an earlier run
    PageKept*                           each page taken back from the resume store (no work)
    ModelLoading, ModelLoaded           before the first page that needs the model, if not loaded
    per page to convert, in order (drafting may run pages ahead of the decode):
        PageDrafting                    its drafter has started (possibly while earlier pages decode)
        RegionsDrafted                  its drafter has finished (the regions, the seconds it took)
        PageStarted                     its decode has started
        RegionVerified*, TextAppended*  while it decodes
        PageDone                        decoded and saved (or failed: ``result.error``); or decoded
                                        while its drafter still reads it: its Markdown is final, its
                                        regions come with ``RegionsDrafted``, and then
        PageSaved                       it is saved with them: this result (regions, figures) replaces
                                        ``PageDone``'s
    Notice*                             anywhere: something degraded that the user should know
    DocumentDone                        the Markdown is written

A drafter runs ahead, so ``PageDrafting`` / ``RegionsDrafted`` of page n+1 may come before
``PageDone`` of page n, and ``PageSaved`` of page n after ``PageDone`` of later pages. Every event names its page (1-based) where it has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.drafters.base import Region
from core.results import PageResult, RegionStats


@dataclass(frozen=True)
class DocumentPlanned:
    """The run's plan, before any model is loaded. ``pages``: the pages of this run in order (the
    range applied); ``kept``: those of them an earlier run finished (taken back, not converted);
    ``page_count``: pages in the document; ``damaged``: one line where the file had to be repaired
    or some pages could not be read (None: intact)."""

    path: str
    output: str
    page_count: int
    pages: tuple[int, ...]
    kept: tuple[int, ...] = ()
    damaged: str | None = None

    @property
    def to_convert(self) -> tuple[int, ...]:
        kept = set(self.kept)
        return tuple(p for p in self.pages if p not in kept)


@dataclass(frozen=True)
class PageKept:
    """A page an earlier run finished, taken back from the resume store."""

    page: int
    result: PageResult


@dataclass(frozen=True)
class ModelLoading:
    model: str


@dataclass(frozen=True)
class ModelLoaded:
    """The model is ready: ``seconds`` in all, of which ``compile_seconds`` compiling the fast
    engine's passes (``--engine fast``; 0 for the eager engine)."""

    model: str
    seconds: float
    compile_seconds: float = 0.0


@dataclass(frozen=True)
class PageDrafting:
    """The page's drafter has started (for a scan: OCR and layout, which take seconds)."""

    page: int
    drafter: str = ""


@dataclass(frozen=True)
class RegionsDrafted:
    """The page's drafter has finished: its regions, and how long it took."""

    page: int
    regions: list[Region]
    seconds: float = 0.0


@dataclass(frozen=True)
class PageStarted:
    """The page's decode has started. ``index``: its position among the pages this run converts
    (kept pages excluded, 0-based); ``total``: how many pages this run converts."""

    page: int
    index: int
    total: int


@dataclass(frozen=True)
class RegionVerified:
    page: int
    region: int
    stats: RegionStats
    text: str


@dataclass(frozen=True)
class TextAppended:
    page: int
    text: str


@dataclass(frozen=True)
class PageDone:
    """The page is decoded and saved (``result.error`` set: it failed and the run goes on)."""

    page: int
    result: PageResult


@dataclass(frozen=True)
class PageSaved:
    """A page done before its drafter had read it (``PageDone`` without regions) is saved now that
    its regions have come: ``result`` (its regions, its figures' links) replaces ``PageDone``'s."""

    page: int
    result: PageResult


@dataclass(frozen=True)
class Notice:
    """Something degraded that the user should know (a drafter step turned off, a page redone);
    the run goes on. ``page`` None: the whole document."""

    message: str
    page: int | None = None


@dataclass(frozen=True)
class DocumentDone:
    """The document's Markdown is written. ``stats``: ``core.stats.document_stats``."""

    markdown_path: str
    stats: dict = field(default_factory=dict)


#: Every event type, for callers that dispatch on them.
EVENTS = (DocumentPlanned, PageKept, ModelLoading, ModelLoaded, PageDrafting, RegionsDrafted, PageStarted,
          RegionVerified, TextAppended, PageDone, PageSaved, Notice, DocumentDone)
