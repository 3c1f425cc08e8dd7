"""The shown page and its selected region, in one object: the overlay, the Markdown's links to its
regions, the draft inspector and the status line all read the page's record through
``app.page_story``, and are cleared together when the page or the document changes.

Clicking a region inspects it and selects its Markdown; clicking the page outside every region
deselects; selecting or scrolling the Markdown highlights its region, and scrolling the page
brings the Markdown of the region in view to the top. Which Markdown is a region's comes from
aligning the page's drafts with it (``core.review``): the engine's spans credit the words the model
wrote itself to the draft before them, so a formula's LaTeX belonged to the paragraph above it.
"""

from __future__ import annotations

from contextlib import contextmanager

from PySide6.QtCore import QObject, Signal

from app import page_story
from app.markdown_view import map_spans
from core.api import review_page


class PageInspection(QObject):
    status = Signal(str)   # the status line of what is selected (or of the page, once deselected)

    def __init__(self, page_view, markdown_view, inspector, show_inspector, parent=None):
        super().__init__(parent)
        self.page_view = page_view
        self.markdown_view = markdown_view
        self.inspector = inspector
        self._show_inspector = show_inspector  # brings the inspector's tab forward
        self.doc = None
        self.page: int | None = None
        self.mode = "hsd"
        self.running = False
        self.selected: int | None = None
        self.spans: list = []
        self.text = ""                         # the page Markdown the spans are offsets in
        self._drawn: tuple | None = None      # (document, page, regions list) drawn on the page view
        self._review: tuple | None = None     # (result, text, core.review.PageReview) of the shown page
        self._following = False               # one pane follows the other: the other does not follow back
        self.review_panel = None              # app.review_panel.ReviewPanel, told of every change
        page_view.region_clicked.connect(self.select)
        page_view.view_moved.connect(self._page_scrolled)
        page_view.background_clicked.connect(self.deselect)
        markdown_view.page_selection.connect(self._markdown_selection)
        source = getattr(markdown_view, "source", None)
        if source is not None:  # follow the page while the Markdown scrolls
            source.verticalScrollBar().valueChanged.connect(self._markdown_scrolled)
            markdown_view.rendered.verticalScrollBar().valueChanged.connect(self._markdown_scrolled)

    @property
    def record(self):
        return self.doc.pages.get(self.page) if self.doc is not None and self.page is not None else None

    def show(self, doc, page: int | None, mode: str, running: bool) -> None:
        """A page is shown (its image already on the page view): its regions drawn, nothing selected
        (a status line about a region of the last page gives way to this page's)."""
        had = self.selected is not None
        self.doc, self.page, self.selected, self._drawn = doc, page, None, None
        self.inspector.clear()
        self.refresh(mode, running)
        if self.review_panel is not None and self.record is None:
            self.review_panel.set_document(doc)
        if had and doc is not None and page is not None:
            self.status.emit(page_story.page_line(doc, page))

    def clear(self) -> None:
        if self.selected is not None:
            self.status.emit("")
        self.doc = self.page = self.selected = self._drawn = self._review = None
        self.spans, self.text = [], ""
        self.inspector.clear()
        if self.review_panel is not None:
            self.review_panel.set_document(None)

    def refresh(self, mode: str, running: bool) -> None:
        """The shown page's record changed: redraw its overlay and the selected region's story."""
        self.mode, self.running = mode, running
        record = self.record
        if record is None:
            return
        drawn = self._drawn
        if drawn is None or drawn[0] is not self.doc or drawn[1] != self.page or drawn[2] is not record.regions:
            self.page_view.set_regions(record.regions, record.region_stats, mode)
            self._drawn = (self.doc, self.page, record.regions)
            if self.selected is not None:
                self.page_view.highlight_region(self.selected)
        else:
            for i, stats in enumerate(record.region_stats or []):
                self.page_view.update_region(i, stats)
        self.text = self.doc.page_markdown(self.page) if record.result else ""
        review = self.review()
        self.spans = ((review.region_spans if review is not None else [])
                      or (map_spans(record.result, self.text) if record.result else []))
        if self.selected is not None:
            self._tell(self.selected, move=False)
        if self.review_panel is not None:
            self.review_panel.set_document(self.doc, self.page, self.text)

    def review(self):
        """The shown page's departures and region spans (``core.review.PageReview``), None before
        it is converted."""
        record = self.record
        result = record.result if record is not None else None
        if result is None:
            return None
        if self._review is None or self._review[0] is not result or self._review[1] != self.text:
            self._review = (result, self.text, review_page(result, self.text))
        return self._review[2]

    def show_departure(self, departure) -> None:
        """A place of the review list is chosen (its page shown): its region highlighted and brought
        into view, its words selected in the Markdown (a skipped passage: the line it is missing from)."""
        start, end = departure.start, departure.end
        if end <= start:
            line = self.text.rfind("\n", 0, start) + 1
            stop = self.text.find("\n", start)
            start, end = line, stop if stop >= 0 else len(self.text)
        with self._one_way():
            if departure.region is not None and self.story(departure.region) is not None:
                self.selected = departure.region
                self.page_view.highlight_region(departure.region, center=True)
                self.inspector.show_story(self.story(departure.region))
            self.markdown_view.show_range(start, end)
        self.status.emit(f"Page {departure.page}: {departure.describe()}")
    def story(self, index: int):
        return page_story.region_story(self.record, index, self.mode, self.running, self.text, self.review())

    def select(self, index: int) -> None:
        """A region was clicked: inspect it and show the Markdown it produced."""
        if self.story(index) is None:
            self.deselect()
            return
        self.selected = index
        self.page_view.highlight_region(index)
        self._tell(index, move=True)
        self._show_inspector()

    def deselect(self) -> None:
        """Nothing selected: no highlight, an empty inspector, the page's own status line."""
        had = self.selected is not None
        self.selected = None
        self.page_view.highlight_region(None)
        self.inspector.clear()
        if had and self.doc is not None and self.page is not None:
            self.status.emit(page_story.page_line(self.doc, self.page))

    def _tell(self, index: int, move: bool) -> None:
        story = self.story(index)
        if story is None:
            self.deselect()
            return
        self.inspector.show_story(story)
        if move and story.main_range:
            with self._one_way():
                self.markdown_view.show_range(*story.main_range)
        elif move and story.shown:  # its text is not in the Markdown: no other region's stays selected
            self.markdown_view.select_nothing()
        self.status.emit(story.status_line())

    # -- Markdown -> region -------------------------------------------------------------------------

    def region_at_offset(self, offset: int) -> int | None:
        for region, start, end in self.spans:
            if start <= offset < end:
                return region
        return None

    def _markdown_scrolled(self, _value: int) -> None:
        """Follow the Markdown: highlight (and bring into view) the region whose text is at the top."""
        if self._following or not self.spans or not self.markdown_view.isVisible() or self.markdown_view.updating:
            return
        offset = self.markdown_view.top_offset()
        if offset is None:
            return
        region = self.region_at_offset(offset)
        if region is None:
            region = next((r for r, start, _ in self.spans if start >= offset and r is not None), None)
        if region is not None and region != self.page_view.highlighted:
            with self._one_way():
                self.page_view.highlight_region(region, center=True)

    def _page_scrolled(self) -> None:
        """Follow the page: the Markdown of the region the reader sees first comes to the top."""
        if self._following or not self.spans or not self.page_view.isVisible():
            return
        region = self.page_view.region_in_view()
        story = self.story(region) if region is not None else None
        if story is None or story.main_range is None:
            return
        with self._one_way():
            self.markdown_view.scroll_to(story.main_range[0])

    @contextmanager
    def _one_way(self):
        """One pane moves the other: the other's moving does not move the first back."""
        was, self._following = self._following, True
        try:
            yield
        finally:
            self._following = was

    def _markdown_selection(self, start: int, end: int) -> None:
        region = self.region_at_offset(start)
        if region is None and end > start:
            region = self.region_at_offset(end - 1)
        if region is not None:
            self.selected = region
            with self._one_way():
                self.page_view.highlight_region(region, center=True)
            self._tell(region, move=False)
