"""The review list: every place where the model departs from the page's text (``core.review``), in
the document's order, with the model's words and the page's own words side by side.

Next / previous (F8 / Shift+F8 in the window) step through the places; each one chosen is told with
``departure_chosen`` so that the window shows its page, highlights its region and selects its words
in the Markdown. A page whose drafts and Markdown agree too little to list is one line of the list,
stepped over. The reviews are computed once per page result and text shown (a page's review is a word
alignment: milliseconds, not worth redoing on every event of a running conversion).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPlainTextEdit, QPushButton,
                               QVBoxLayout, QWidget)

from core.api import review_page, summary_line

#: Item data: the departure an item stands for (None: a page's note).
DEPARTURE_ROLE = Qt.ItemDataRole.UserRole + 1


def departure_line(d) -> str:
    """``p. 3 · region 4 (text): the model wrote “13” where the page reads “12”``."""
    region = f"region {d.region + 1} ({d.label})" if d.region is not None else "no region"
    return f"p. {d.page} · {region}: {d.describe()}"


class ReviewPanel(QWidget):
    departure_chosen = Signal(object)   # a ``core.review.Departure``

    def __init__(self, parent=None):
        super().__init__(parent)
        self.summary = QLabel("No converted pages to review.")
        self.summary.setWordWrap(True)
        self.previous_button = QPushButton("◀ Previous")
        self.next_button = QPushButton("Next ▶")
        self.previous_button.setToolTip("The place before (Shift+F8)")
        self.next_button.setToolTip("The next place where the model departs from the page (F8)")
        self.previous_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.currentRowChanged.connect(self._row_changed)
        self.model_words = QPlainTextEdit()
        self.page_words = QPlainTextEdit()
        for box, tip in ((self.model_words, "The model's words"),
                         (self.page_words, "The page's own words (its draft)")):
            box.setReadOnly(True)
            box.setMaximumHeight(90)
            box.setPlaceholderText(tip)
        # the summary has a line of its own and the titles wrap: the tab is no wider than the
        # region inspector beside it, so the window can be as narrow as without the review list
        steps = QHBoxLayout()
        steps.addStretch(1)
        steps.addWidget(self.previous_button)
        steps.addWidget(self.next_button)
        side = QHBoxLayout()
        for title, box in (("The model wrote", self.model_words), ("The page reads", self.page_words)):
            column = QVBoxLayout()
            heading = QLabel(f"<b>{title}</b>")
            heading.setWordWrap(True)
            column.addWidget(heading)
            column.addWidget(box)
            side.addLayout(column)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addLayout(steps)
        layout.addWidget(self.list, 1)
        layout.addLayout(side)
        self.doc = None
        self.reviews: list = []
        self._cache: dict[int, tuple] = {}   # page -> (result, text, review)
        self._filling = False
        self._enable()

    # -- content ----------------------------------------------------------------------------------

    def set_document(self, doc, shown: int | None = None, shown_text: str | None = None) -> None:
        """Show ``doc``'s finished pages' departures (None: nothing); the place chosen stays chosen
        where it is still found. A page is reviewed again when its result changes; ``shown`` (the
        page on view) also when its Markdown, ``shown_text``, does."""
        if doc is not self.doc:
            self.doc, self._cache = doc, {}
        reviews = []
        for number, result in sorted((doc.results if doc is not None else {}).items()):
            cached = self._cache.get(number)
            if (cached is None or cached[0] is not result
                    or (number == shown and shown_text is not None and cached[1] != shown_text)):
                text = shown_text if number == shown and shown_text is not None else doc.page_markdown(number)
                cached = (result, text, review_page(result, text))
                self._cache[number] = cached
            reviews.append(cached[2])
        if [id(r) for r in reviews] == [id(r) for r in self.reviews]:
            return
        chosen = self.current()
        key = (chosen.page, chosen.start, chosen.end, chosen.kind) if chosen is not None else None
        self.reviews = reviews
        self._fill(key)

    def _fill(self, key) -> None:
        self._filling = True
        try:
            self.list.clear()
            keep = -1
            for review in self.reviews:
                if review.note and (review.low_agreement or review.model_words):
                    item = QListWidgetItem(f"p. {review.page}: {review.note}")
                    item.setForeground(QColor("#8a5a00"))
                    item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                    self.list.addItem(item)
                for d in review.departures:
                    item = QListWidgetItem(departure_line(d))
                    item.setData(DEPARTURE_ROLE, d)
                    item.setToolTip(f"the model: {d.model_text or '(nothing)'}\nthe page: {d.page_text or '(nothing)'}")
                    self.list.addItem(item)
                    if key == (d.page, d.start, d.end, d.kind):
                        keep = self.list.count() - 1
            self.summary.setText(summary_line(self.reviews) if self.reviews else "No converted pages to review.")
            if keep >= 0:
                self.list.setCurrentRow(keep)
            else:
                self._show_words(None)
        finally:
            self._filling = False
        self._enable()

    @property
    def count(self) -> int:
        return sum(r.count for r in self.reviews)

    def departures(self) -> list:
        return [self.list.item(i).data(DEPARTURE_ROLE) for i in range(self.list.count())
                if self.list.item(i).data(DEPARTURE_ROLE) is not None]

    def current(self):
        item = self.list.currentItem()
        return item.data(DEPARTURE_ROLE) if item is not None else None

    # -- stepping ---------------------------------------------------------------------------------

    def step(self, delta: int) -> None:
        """Choose the next (``delta`` 1) or previous (-1) place, round the ends; page notes are
        stepped over."""
        rows = [i for i in range(self.list.count()) if self.list.item(i).data(DEPARTURE_ROLE) is not None]
        if not rows:
            return
        row = self.list.currentRow()
        if row < 0 or row not in rows:
            after = [r for r in rows if r > row] if delta > 0 else [r for r in rows if r < row]
            target = (after[0] if delta > 0 else after[-1]) if after and row >= 0 else rows[0 if delta > 0 else -1]
        else:
            target = rows[(rows.index(row) + delta) % len(rows)]
        if target == row:
            self._row_changed(row)  # one place: choosing it again shows it again
        else:
            self.list.setCurrentRow(target)

    def _row_changed(self, row: int) -> None:
        item = self.list.item(row) if row >= 0 else None
        departure = item.data(DEPARTURE_ROLE) if item is not None else None
        self._show_words(departure)
        if departure is not None and not self._filling:
            self.departure_chosen.emit(departure)

    def _show_words(self, d) -> None:
        self.model_words.setPlainText("" if d is None else d.model_text or "(nothing: the model left it out)")
        self.page_words.setPlainText("" if d is None else d.page_text or "(nothing: no draft holds it)")

    def _enable(self) -> None:
        on = any(r.departures for r in self.reviews)
        self.previous_button.setEnabled(on)
        self.next_button.setEnabled(on)
