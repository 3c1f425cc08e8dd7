"""What the window knows about one open document: one ``PageRecord`` per page (what the page shows:
its drafter regions, their verification, the streamed or finished Markdown, its phase), the run's
plan, and drafter regions shown before any conversion (drafted in the background by
``DraftPreviewer``).

Every pane reads a page from its record (``app.page_story`` turns a record into words), so the
overlay, the inspector, the labels and the status bar cannot tell different stories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.settings import ConversionSettings

class PagePhase(StrEnum):
    """A page's phase in the run: not touched yet, drafting, drafted (drafted ahead of the decode:
    its regions are there and it waits for the model), decoding, finished (``result`` set), or
    cancelled while decoding (``PARTIAL``: its drafts and what was verified are kept). Each equals
    its value, so a record's phase reads as the words it stands for."""

    UNTOUCHED = ""
    DRAFTING = "drafting"
    DRAFTED = "drafted"
    DECODING = "decoding"
    DONE = "done"
    PARTIAL = "partial"


class PageState(StrEnum):
    """What a page shows, in one word (``app.page_story.page_state`` reads it from the page's record
    and its document): its phase, its result (done, cut at the token limit, failed) or why nothing
    happens to it (open: nothing asked; not in range of the run). Each equals its value, the word
    the thumbnails carry."""

    OPEN = "open"
    QUEUED = "queued"
    NOT_IN_RANGE = "not in range"
    DRAFTING = "drafting"
    DRAFTED = "drafted"
    CONVERTING = "converting"
    DONE = "done"
    CUT_AT_LIMIT = "warning"
    FAILED = "failed"
    PARTIAL = "partial"


@dataclass
class PageRecord:
    """Everything one page shows. ``regions``/``region_stats``: the drafter's regions and, per
    region, its ``RegionStats`` once verified (None before); ``text``: the page's Markdown so far."""

    number: int
    phase: PagePhase = PagePhase.UNTOUCHED
    result: object = None                    # core PageResult once done (or failed)
    kept: bool = False                       # taken back from an earlier run (no work in this run)
    regions: list = field(default_factory=list)
    region_stats: list | None = None
    text: str = ""
    preview: bool = False                    # regions from the preview drafter, nothing converted
    drafter: str = ""                        # the drafter running on the page (while drafting)
    drafting_since: float | None = None      # monotonic clock when its drafter started
    draft_seconds: float | None = None       # how long its drafter took (once drafted in this run)
    decoding: bool = False                   # its decode has started (the drafter may still run)
    decoded: bool = False                    # its decode has ended before its drafter (a later page started)

    def drafting(self, drafter: str, now: float) -> None:
        self.phase, self.drafter, self.drafting_since = PagePhase.DRAFTING, drafter, now

    def drafted(self, regions, seconds: float | None = None) -> None:
        self.regions, self.region_stats, self.preview = list(regions), [None] * len(regions), False
        self.drafting_since, self.draft_seconds = None, seconds
        if self.phase == PagePhase.DRAFTING:
            self.phase = PagePhase.DECODING if self.decoding else PagePhase.DRAFTED

    def started(self) -> None:
        """Its decode has started (its drafter may still run: the decode then starts without drafts)."""
        self.decoding = True
        if self.phase != PagePhase.DRAFTING:
            self.phase = PagePhase.DECODING

    def finished(self, result, kept: bool = False) -> None:
        self.result, self.kept, self.phase = result, kept, PagePhase.DONE
        self.regions, self.region_stats = result.regions, result.region_stats
        self.text, self.preview, self.drafting_since, self.decoding, self.decoded = "", False, None, False, False

    def interrupted(self) -> None:
        """The run stopped: a page whose decode had started keeps what it has, as partial; a page
        only drafted (ahead of the decode) keeps its drafter's regions and is not converted."""
        if self.decoding and (self.text or self.regions):
            self.phase = PagePhase.PARTIAL
        elif self.phase in (PagePhase.DRAFTING, PagePhase.DRAFTED, PagePhase.DECODING):
            self.phase = PagePhase.UNTOUCHED
        self.drafting_since, self.decoding, self.decoded = None, False, False


class DocumentStatus(StrEnum):
    """Where a document stands: open (not converted), queued, converting, or how its last run
    ended (``app.worker.RunStatus``'s values). Each equals its value."""

    OPEN = "open"
    QUEUED = "queued"
    CONVERTING = "converting"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass
class DocumentState:
    path: Path
    page_count: int
    doc: object = None                       # core Document opened for display (GUI thread only)
    status: DocumentStatus = DocumentStatus.QUEUED
    error: str | None = None
    notices: list = field(default_factory=list)  # what core degraded during the last run
    password: str | None = None
    settings: ConversionSettings | None = None   # what the results were converted with
    pages: dict = field(default_factory=dict)    # page (1-based) -> PageRecord
    in_range: tuple | None = None            # pages of the last run's range (None: all)
    damaged: str | None = None               # why the file had to be repaired (from the run's plan)
    markdown_path: Path | None = None        # the work folder's file written at the end of a run
    exported_markdown: Path | None = None    # where the user last exported the Markdown
    fresh: bool = False
    previous: dict | None = None             # the last good pages while a new run has produced nothing
    finished_status: DocumentStatus | None = None  # how the last run that produced pages ended
    edits: object = None                     # the user's corrections (core.edits.PageEdits, app.page_editing)

    def __post_init__(self):
        self.status = DocumentStatus(self.status)
        for n in range(1, self.page_count + 1):
            self.pages.setdefault(n, PageRecord(n))

    @property
    def name(self) -> str:
        return self.path.name

    def page(self, number: int) -> PageRecord:
        return self.pages[number]

    @property
    def results(self) -> dict:
        """Page (1-based) -> PageResult of the finished pages (a new dict each time)."""
        return {n: r.result for n, r in sorted(self.pages.items()) if r.result is not None}

    def page_in_range(self, number: int) -> bool:
        return self.in_range is None or number in self.in_range

    def begin_run(self, in_range) -> None:
        """A new run: set the finished pages aside (given back if the run fails before any page)
        and start every page afresh, keeping the drafter regions shown."""
        self.previous = None
        if self.results:
            self.previous = {"pages": self.pages, "settings": self.settings,
                             "status": self.finished_status or DocumentStatus.DONE, "markdown_path": self.markdown_path,
                             "in_range": self.in_range, "damaged": self.damaged}
        self.pages = {n: PageRecord(n, regions=list(r.regions), preview=bool(r.regions))
                      for n, r in self.pages.items()}
        self.in_range = tuple(in_range) if in_range is not None else None
        self.error, self.notices, self.damaged, self.markdown_path = None, [], None, None

    def restore_previous(self) -> bool:
        """Put the last good pages back (a run that failed before any page); True if there were some."""
        kept, self.previous = self.previous, None
        if kept is None or self.results:
            return False
        self.pages, self.settings = kept["pages"], kept["settings"]
        self.status = self.finished_status = DocumentStatus(kept["status"])
        self.markdown_path, self.in_range, self.damaged = kept["markdown_path"], kept["in_range"], kept["damaged"]
        return True

    def page_markdown(self, page: int) -> str:
        from core.api import page_markdown

        record = self.pages.get(page)
        if record is None:
            return ""
        if record.result is not None:
            text = page_markdown(record.result, record.result.figure_links)
            return self.edits.text_of(page, text) if self.edits else text
        return record.text

    def document_markdown(self) -> str:
        """What ``hsd convert`` writes: the work folder's file once written, else the same assembly
        (the user's edits in place of the pages they replace)."""
        from core.api import assemble

        if self.status == DocumentStatus.DONE and self.markdown_path and self.markdown_path.exists() and not self.edits:
            return self.markdown_path.read_text("utf-8")
        parts = []
        for number, record in sorted(self.pages.items()):
            if record.result is not None:
                parts.append(self.page_markdown(number))
            elif record.text and record.phase in (PagePhase.DRAFTING, PagePhase.DECODING):
                parts.append(record.text)
        return assemble(parts) if parts else ""


class DraftPreviewer(QObject):
    """Drafts a shown page in a background thread, so its regions appear before any model loads.

    The thread opens its own copy of the document (a PyMuPDF document is not shared across threads).
    It emits ``drafted`` through an ``EmitGate``: once the window closes (``close``) or this object
    is destroyed with it, no region is emitted any more and the thread ends after the page it is on."""

    drafted = Signal(str, int, object)   # document path, page (1-based), list[Region] (or an error text)

    def __init__(self, parent=None):
        super().__init__(parent)
        import queue

        from app.worker import EmitGate

        self._queue: queue.Queue = queue.Queue()
        self._thread = None
        self._gate = EmitGate(self)

    def request(self, path: Path, password: str | None, page: int, drafter: str, rotate: str = "off") -> None:
        import threading

        if not self._gate.open:
            return
        self._queue.put((path, password, page, drafter, rotate))
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=_draft_previews, args=(self._queue, self._gate, self.drafted),
                                            name="draft-preview", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """No more previews: the thread emits nothing from now on and ends after its current page."""
        self._gate.shut()
        self._queue.put(None)


#: How long the preview thread waits for another page before it ends (a new request starts another).
PREVIEW_IDLE_SECONDS = 2.0


def _draft_previews(requests, gate, drafted) -> None:
    """The preview thread: draft each requested page until none comes for a while or ``None`` (the
    window closing) arrives. Only ``gate`` touches the Qt object, so a destroyed window is never used."""
    import queue

    from core.api import get_drafter, open_document

    drafters: dict = {}
    while True:
        try:
            request = requests.get(timeout=PREVIEW_IDLE_SECONDS)
        except queue.Empty:
            return
        if request is None or not gate.open:
            return
        path, password, page, name, rotate = request
        try:
            drafter = drafters.get(name) or drafters.setdefault(name, get_drafter(name))
            with open_document(path, password=password, rotate=rotate) as doc:
                regions = list(drafter.draft(doc.page(page - 1)))
        except Exception as exc:  # a preview only: the conversion reports real failures
            regions = f"{type(exc).__name__}: {exc}"
        if not gate.emit(drafted, str(path), page, regions):
            return
