"""Progress people can read: the document's pages done / total, tokens per second, time elapsed
and left, the running page's progress, and each thumbnail's state with its acceptance colour.

``ProgressTracker`` is plain Python (clock injectable, so tests can drive it); ``page_state`` and
``thumbnail_icon`` decide how a page looks in the thumbnail list.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap

from app.page_view import acceptance_color

STATE_LABEL = {"queued": "queued", "converting": "converting…", "done": "done", "failed": "failed",
               "warning": "token limit", "partial": "partial", "open": ""}
STATE_COLOR = {"queued": QColor(170, 170, 170), "converting": QColor(30, 110, 230), "failed": QColor(200, 30, 30),
               "partial": QColor(150, 90, 200), "open": QColor(170, 170, 170)}
FRAME = 4


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class ProgressTracker:
    """Numbers of the running job; ``text()`` is the status line beside the progress bar."""

    def __init__(self, total: int = 0, clock=time.monotonic):
        self.clock = clock
        self.start(total)

    def start(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.tokens = 0
        self.started = self.clock()
        self.page: int | None = None
        self.page_chars = 0
        self.loading = False

    def page_started(self, page: int) -> None:
        self.page = page
        self.page_chars = 0

    def text_appended(self, text: str) -> None:
        self.page_chars += len(text)

    def page_done(self, result) -> None:
        self.done += 1
        self.tokens += result.stats.generated_tokens if result.stats is not None and not result.error else 0

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def tokens_per_second(self) -> float | None:
        return self.tokens / self.elapsed if self.tokens and self.elapsed > 0 else None

    def seconds_left(self) -> float | None:
        if not self.done or self.done >= self.total:
            return None
        return self.elapsed / self.done * (self.total - self.done)

    def bar_text(self) -> str:
        return f"{self.done} / {self.total} pages"

    def text(self) -> str:
        parts = [f"{self.done} of {self.total} pages done"]
        if self.loading:
            parts.append("loading the model")
        elif self.page is not None and self.done < self.total:
            parts.append(f"page {self.page}: {self.page_chars:,} chars")
        rate = self.tokens_per_second()
        parts.append(f"{rate:.1f} tokens/s" if rate is not None else "— tokens/s")
        parts.append(f"{format_duration(self.elapsed)} elapsed")
        left = self.seconds_left()
        parts.append(f"about {format_duration(left)} left" if left is not None else "time left after page 1")
        return " · ".join(parts)


def page_acceptance(result) -> float | None:
    """Share of drafted tokens accepted on a finished page (verified regions only); None if none."""
    drafted = accepted = 0
    for stats in result.region_stats or []:
        if stats is not None and stats.verified and stats.drafted_tokens:
            drafted += stats.drafted_tokens
            accepted += stats.accepted_tokens
    return accepted / drafted if drafted else None


def page_state(doc, page: int) -> str:
    """queued, converting, done, warning (stopped at the token limit), failed, partial or open."""
    result = doc.results.get(page)
    if result is not None:
        if result.error:
            return "failed"
        if result.stats is not None and result.stats.stop_reason == "max_new_tokens":
            return "warning"
        return "done"
    if page in getattr(doc, "partial_pages", {}):
        return "partial"
    if doc.status == "converting":
        return "converting" if page == getattr(doc, "converting_page", None) else "queued"
    if doc.status == "queued":
        return "queued"
    return "open"


def state_color(doc, page: int, state: str) -> QColor:
    if state in ("done", "warning"):
        return acceptance_color(page_acceptance(doc.results[page]))
    return STATE_COLOR[state]


def thumbnail_icon(base: QPixmap, state: str, color: QColor) -> QIcon:
    """The page thumbnail with a frame in its state's colour (acceptance colour once done) and, for a
    warning, a triangle in the corner."""
    pixmap = QPixmap(base)
    painter = QPainter(pixmap)
    pen = QPen(color, FRAME if state != "open" else 1)
    pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
    painter.setPen(pen)
    inset = FRAME // 2 if state != "open" else 0
    painter.drawRect(inset, inset, pixmap.width() - 1 - 2 * inset, pixmap.height() - 1 - 2 * inset)
    if state == "warning":
        painter.setPen(QPen(QColor(120, 70, 0)))
        painter.setBrush(QColor(245, 166, 35))
        w = pixmap.width()
        from PySide6.QtCore import QPointF
        from PySide6.QtGui import QPolygonF

        painter.drawPolygon(QPolygonF([QPointF(w - 22, 24), QPointF(w - 12, 6), QPointF(w - 2, 24)]))
    painter.end()
    return QIcon(pixmap)


def thumbnail_tooltip(doc, page: int, state: str) -> str:
    result = doc.results.get(page)
    if state == "failed":
        return f"page {page}: failed: {result.error}"
    if state in ("done", "warning"):
        s = result.stats
        rate = page_acceptance(result)
        text = (f"page {page}: {s.generated_tokens} tokens, {s.forward_passes} passes, "
                f"draft accepted {'—' if rate is None else f'{rate:.0%}'}")
        if state == "warning":
            text += "\nwarning: stopped at the token limit, the page may be cut short (Settings > Max tokens)"
        return text
    if state == "partial":
        return f"page {page}: cancelled while converting; drafts and what was verified are kept (partial)"
    return f"page {page}: {STATE_LABEL[state] or 'not converted'}"
