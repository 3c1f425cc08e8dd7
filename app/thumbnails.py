"""The page list: one thumbnail per page, framed in its state's colour (the acceptance colour once
converted), labelled with its number and state, and a legend that names every frame colour.

Thumbnails render a few at a time on a timer, so a long document opens at once.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import QLabel, QListView, QListWidget, QListWidgetItem

from app import page_story
from app.document_state import PageState
from app.page_view import acceptance_color, pil_to_qimage
from app.widgets import plain_tooltip

ICON = QSize(100, 130)
THUMB_DPI = 16
FRAME = 4
#: Frame colours of pages not (or not yet) converted; a converted page is framed in its acceptance
#: colour (the region overlay's scale).
STATE_COLOR = {PageState.QUEUED: QColor(170, 170, 170), PageState.DRAFTING: QColor(0, 150, 160),
               PageState.DRAFTED: QColor(120, 200, 205), PageState.CONVERTING: QColor(30, 110, 230),
               PageState.FAILED: QColor(200, 30, 30), PageState.PARTIAL: QColor(150, 90, 200),
               PageState.OPEN: QColor(170, 170, 170), PageState.NOT_IN_RANGE: QColor(200, 200, 200)}
THIN = (PageState.OPEN, PageState.NOT_IN_RANGE)
MARK = {PageState.DONE: " ✓", PageState.FAILED: " ✗", PageState.CUT_AT_LIMIT: " ⚠"}
#: What the legend names, in order: (state, words).
LEGEND = ((PageState.QUEUED, "waiting"), (PageState.DRAFTING, "drafting"), (PageState.DRAFTED, "drafted"),
          (PageState.CONVERTING, "converting"), (PageState.FAILED, "failed"),
          (PageState.PARTIAL, "partial (cancelled)"))


def frame_color(doc, number: int, state: PageState) -> QColor:
    if state in (PageState.DONE, PageState.CUT_AT_LIMIT):
        return acceptance_color(page_story.page_acceptance(doc.pages[number].result))
    return STATE_COLOR[state]


def thumbnail_icon(base: QPixmap, state: PageState, color: QColor) -> QIcon:
    """The page thumbnail with a frame in ``color`` and, for a page cut at the token limit, a
    warning triangle in the corner."""
    pixmap = QPixmap(base)
    painter = QPainter(pixmap)
    thin = state in THIN
    pen = QPen(color, 1 if thin else FRAME)
    pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
    painter.setPen(pen)
    inset = 0 if thin else FRAME // 2
    painter.drawRect(inset, inset, pixmap.width() - 1 - 2 * inset, pixmap.height() - 1 - 2 * inset)
    if state == PageState.CUT_AT_LIMIT:
        painter.setPen(QPen(QColor(120, 70, 0)))
        painter.setBrush(QColor(245, 166, 35))
        w = pixmap.width()
        painter.drawPolygon(QPolygonF([QPointF(w - 22, 24), QPointF(w - 12, 6), QPointF(w - 2, 24)]))
    painter.end()
    return QIcon(pixmap)


def legend_html() -> str:
    swatch = '<span style="color:{}">■</span>&nbsp;{}'
    keep = lambda words: words.replace(" ", "&nbsp;")  # noqa: E731 (an entry never breaks across lines)
    parts = [swatch.format(STATE_COLOR[state].name(), keep(words)) for state, words in LEGEND]
    return ("Page frames: " + " ".join(parts) + f" · {keep('converted: as the regions')} · {keep('⚠ token limit')}")


class FrameLegend(QLabel):
    """The frame colours of the page list, in words (below the regions' colour scale)."""

    def __init__(self, parent=None):
        super().__init__(legend_html(), parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setContentsMargins(6, 0, 6, 2)
        self.setToolTip("A page's frame in the page list says where it is in the conversion; once converted, "
                        "its colour is the share of its drafts the model accepted, on the regions' scale above "
                        "(red 0 %, amber 50 %, green 100 %); ⚠: the page was cut at the token limit")


class PageList(QListWidget):
    """Thumbnails of one document's pages."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setFlow(QListView.Flow.TopToBottom)
        self.setWrapping(False)
        self.setIconSize(ICON)
        self.setUniformItemSizes(True)
        self.setMovement(QListView.Movement.Static)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        # a light wash of blue over the palette's base: the frame's colour stays visible, light or dark
        self.setStyleSheet("QListWidget::item:selected { background: rgba(40, 110, 220, 28%); color: palette(text); }")
        self.setAcceptDrops(False)
        self._fit_grid()
        self.doc = None
        self._bases: dict[int, QPixmap] = {}
        self._todo: list[int] = []
        self._placeholder = QPixmap(ICON)
        self._placeholder.fill(QColor(250, 250, 250))
        self._timer = QTimer(self)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._render_some)

    def _fit_grid(self) -> None:
        """Room for the icon and two lines of label (the state's longest words included)."""
        fm = self.fontMetrics()
        widest = fm.horizontalAdvance("drafting (text layer) · 99 s") + 8
        self.setGridSize(QSize(max(ICON.width() + 24, min(widest, 190)), ICON.height() + 2 * fm.lineSpacing() + 14))

    def show_document(self, doc) -> None:
        self.doc = doc
        self._bases.clear()
        self.blockSignals(True)
        self.clear()
        for n in range(1, doc.page_count + 1):
            item = QListWidgetItem(QIcon(self._placeholder), str(n))
            item.setTextAlignment(Qt.AlignmentFlag.AlignHCenter)
            item.setSizeHint(self.gridSize())  # the label's width is the grid's, not the first label's
            self.addItem(item)
            self.mark(n)
        self.blockSignals(False)
        self._todo = list(range(1, doc.page_count + 1))
        self._timer.start()

    def forget(self) -> None:
        self.doc = None
        self._todo = []
        self.clear()

    def _render_some(self, count: int = 3) -> None:
        doc = self.doc
        if doc is None or not self._todo:
            self._timer.stop()
            return
        for _ in range(count):
            if not self._todo:
                break
            n = self._todo.pop(0)
            try:
                image = doc.doc.page(n - 1).render(THUMB_DPI * 2)
            except Exception:
                continue
            self._bases[n] = QPixmap.fromImage(pil_to_qimage(image))
            self.mark(n)

    def mark_all(self) -> None:
        if self.doc is not None:
            for n in range(1, self.doc.page_count + 1):
                self.mark(n)

    def mark(self, number: int) -> None:
        """The page's state in its label, its frame and its tooltip."""
        doc = self.doc
        item = self.item(number - 1) if doc is not None else None
        if item is None:
            return
        state = page_story.page_state(doc, number)
        label = page_story.state_label(doc, number)
        item.setText(f"{number}{MARK.get(state, '')}" + (f"\n{label}" if label and state != PageState.DONE else ""))
        item.setToolTip(plain_tooltip(page_story.page_tooltip(doc, number)))
        item.setData(Qt.ItemDataRole.UserRole, state)
        base = self._bases.get(number, self._placeholder)
        item.setIcon(thumbnail_icon(base, state, frame_color(doc, number, state)))
