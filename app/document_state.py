"""What the window knows about one open document: its pages' results, the streamed text and
regions of the page converting, a cancelled page kept as partial, and drafter regions shown before
any conversion (drafted in the background by ``DraftPreviewer``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.settings import ConversionSettings


@dataclass
class DocumentState:
    path: Path
    page_count: int
    doc: object = None                       # core Document opened for display (GUI thread only)
    status: str = "queued"
    error: str | None = None
    warnings: list = field(default_factory=list)  # core's warnings during the last conversion
    password: str | None = None
    settings: ConversionSettings | None = None   # what the results were converted with
    results: dict = field(default_factory=dict)  # page (1-based) -> PageResult
    live_text: dict = field(default_factory=dict)  # page -> streamed Markdown so far
    live_regions: dict = field(default_factory=dict)  # page -> [regions, [stats or None]]
    markdown_path: Path | None = None        # the work folder's file written by write_markdown
    exported_markdown: Path | None = None    # where the user last exported the Markdown
    fresh: bool = False
    previous: dict | None = None             # the last good result while a new run has produced nothing
    finished_status: str = ""                # how the last run that produced pages ended
    converting_page: int | None = None       # the page the running job works on
    partial_pages: dict = field(default_factory=dict)  # page -> (regions, stats, text) of a cancelled page
    preview_regions: dict = field(default_factory=dict)  # page -> drafter regions shown before converting

    def keep_previous(self) -> None:
        """Set the finished result aside at the start of a new run (restored if the run fails)."""
        self.previous = None
        if self.results:
            self.previous = {"results": dict(self.results), "settings": self.settings,
                             "status": self.finished_status or "done",
                             "markdown_path": self.markdown_path}

    def restore_previous(self) -> bool:
        """Put the last good result back (a run that failed before any page); True if there was one."""
        kept, self.previous = self.previous, None
        if kept is None or self.results:
            return False
        self.results = kept["results"]
        self.settings = kept["settings"]
        self.status = self.finished_status = kept["status"]
        self.markdown_path = kept["markdown_path"]
        return True

    @property
    def name(self) -> str:
        return self.path.name

    def page_markdown(self, page: int) -> str:
        from core.api import page_markdown

        result = self.results.get(page)
        if result is not None:
            return page_markdown(result, result.figure_links)
        if page in self.partial_pages:
            return self.partial_pages[page][2]
        return self.live_text.get(page, "")

    def document_markdown(self) -> str:
        """What ``hsd convert`` writes: the work folder's file once written, else the same assembly."""
        from core.api import assemble, page_markdown

        if self.status == "done" and self.markdown_path and self.markdown_path.exists():
            return self.markdown_path.read_text("utf-8")
        pages = [page_markdown(r, r.figure_links) for _, r in sorted(self.results.items())]
        live = [t for p, t in sorted(self.live_text.items()) if p not in self.results]
        return assemble(pages + live) if pages or live else ""


class DraftPreviewer(QObject):
    """Drafts a shown page in a background thread, so its regions appear before any model loads.

    The thread opens its own copy of the document (a PyMuPDF document is not shared across threads)."""

    drafted = Signal(str, int, object)   # document path, page (1-based), list[Region] (or an error text)

    def __init__(self, parent=None):
        super().__init__(parent)
        import queue

        self._queue: queue.Queue = queue.Queue()
        self._thread = None

    def request(self, path: Path, password: str | None, page: int, drafter: str) -> None:
        import threading

        self._queue.put((path, password, page, drafter))
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="draft-preview", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        import queue

        from core.api import open_document
        from core.api import get_drafter

        drafters: dict = {}
        while True:
            try:
                path, password, page, name = self._queue.get(timeout=2)
            except queue.Empty:
                return
            try:
                drafter = drafters.get(name) or drafters.setdefault(name, get_drafter(name))
                with open_document(path, password=password) as doc:
                    regions = list(drafter.draft(doc.page(page - 1)))
            except Exception as exc:  # a preview only: the conversion reports real failures
                regions = f"{type(exc).__name__}: {exc}"
            self.drafted.emit(str(path), page, regions)
