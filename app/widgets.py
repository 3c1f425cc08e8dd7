"""Small widgets that keep the window's text in its place: ``ElidedLabel`` (a label elided to its
width, the whole text in its tooltip), ``StatusLine`` (the status bar's message: one line, its
details in a dialog on click) and ``NameFirstDelegate`` (list items whose first line, a name, is
elided in the middle and whose next lines wrap)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import QLabel, QMessageBox, QSizePolicy, QStyledItemDelegate, QStyleOptionViewItem


def is_dark(widget) -> bool:
    """The widget's palette is a dark one (light text on a dark window)."""
    return widget.palette().color(QPalette.ColorRole.Window).lightness() < 128


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip that shows it letter for letter. Qt renders a tooltip that looks like
    HTML as HTML (a file named ``<img src=…>.pdf`` would draw a picture), so such text is escaped."""
    from PySide6.QtGui import Qt as GuiQt

    return GuiQt.convertFromPlainText(text) if GuiQt.mightBeRichText(text) else text


def plain_message_box(icon, title: str, text: str, buttons, parent=None) -> QMessageBox:
    """A message box that shows ``text`` (file names, errors) as written, never as HTML."""
    box = QMessageBox(icon, title, text, buttons, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    return box


def ask_yes_no(parent, title: str, text: str) -> bool:
    """A modal Yes/No question (No by default) whose text shows as written, never as HTML."""
    box = plain_message_box(QMessageBox.Icon.Question, title, text,
                            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, parent)
    box.setDefaultButton(QMessageBox.StandardButton.No)
    return box.exec() == QMessageBox.StandardButton.Yes


def error_color(widget) -> str:
    """A red that reads on the widget's background, light or dark (contrast 4.5:1 or more)."""
    return "#ff8a80" if is_dark(widget) else "#b00020"


class ElidedLabel(QLabel):
    """A one-line label that elides its text to fit (in the middle by default), never wraps and never
    asks for more width than ``min_chars`` characters; the whole text is in its tooltip when cut."""

    clicked = Signal()

    def __init__(self, text: str = "", mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle,
                 min_chars: int = 8, bold: bool = False, parent=None):
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self._min_chars = min_chars
        if bold:
            font = QFont(self.font())
            font.setBold(True)
            self.setFont(font)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt)
        self._full = str(text)
        self._elide()

    def text(self) -> str:
        """The whole text (what is shown may be elided)."""
        return self._full

    @property
    def elided(self) -> bool:
        return super().text() != self._full

    def _elide(self) -> None:
        width = max(0, self.contentsRect().width())
        shown = self.fontMetrics().elidedText(self._full, self._mode, width) if width else self._full
        super().setText(shown)
        self.setToolTip(plain_tooltip(self._full if shown != self._full else ""))

    def resizeEvent(self, event):  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def sizeHint(self) -> QSize:  # noqa: N802
        fm = self.fontMetrics()
        margins = self.contentsMargins()
        return QSize(fm.horizontalAdvance(self._full) + margins.left() + margins.right() + 4,
                     super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(self.fontMetrics().horizontalAdvance("x" * self._min_chars), super().minimumSizeHint().height())

    def mouseReleaseEvent(self, event):  # noqa: N802
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()


class StatusLine(ElidedLabel):
    """The status bar's message: always one line (elided at its end). Clicking it shows the whole
    message and its details."""

    def __init__(self, text: str = "", parent=None):
        super().__init__(text, Qt.TextElideMode.ElideRight, min_chars=20, parent=parent)
        self.details = ""
        self.clicked.connect(self.show_details)

    def set_message(self, text: str, details: str = "") -> None:
        self.details = details
        self.setText(text)
        self.setCursor(Qt.CursorShape.PointingHandCursor if self.has_more else Qt.CursorShape.ArrowCursor)

    def _elide(self) -> None:
        super()._elide()
        shown = name_first_elided(self._full, self.fontMetrics(), max(0, self.contentsRect().width()))
        if shown != super().text():
            QLabel.setText(self, shown)
        if getattr(self, "details", None) is not None:
            self.setCursor(Qt.CursorShape.PointingHandCursor if self.has_more else Qt.CursorShape.ArrowCursor)

    @property
    def has_more(self) -> bool:
        return self.elided or bool(self.details)

    def show_details(self) -> None:
        if not self.has_more:
            return
        box = plain_message_box(QMessageBox.Icon.Information, "Status", self.text(),
                                QMessageBox.StandardButton.Close, self.window())
        if self.details:
            box.setInformativeText(plain_tooltip(self.details))
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.details_box = box


def name_first_elided(text: str, fm, width: int, share: float = 0.4) -> str:
    """``text`` elided to ``width`` pixels; a message that starts with a long name (``NAME: what
    happened``) gives up the middle of the name first, down to ``share`` of the width, so that what
    happened stays readable (``docling_code…2024.pdf: converting page 3 (3 of 9)``)."""
    if not width or fm.horizontalAdvance(text) <= width:
        return text
    name, sep, rest = text.partition(": ")
    if not sep or fm.horizontalAdvance(name) <= share * width:
        return fm.elidedText(text, Qt.TextElideMode.ElideRight, width)
    room = max(int(share * width), width - fm.horizontalAdvance(sep + rest))
    short = fm.elidedText(name, Qt.TextElideMode.ElideMiddle, room)
    return fm.elidedText(short + sep + rest, Qt.TextElideMode.ElideRight, width)


class NameFirstDelegate(QStyledItemDelegate):
    """Items of a list as wide as its viewport: the first line (a file name) elided in the middle,
    the lines after it wrapped; the whole text belongs in the item's tooltip."""

    PAD = 8

    def __init__(self, view):
        super().__init__(view)
        self.view = view
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setUniformItemSizes(False)
        view.setResizeMode(view.ResizeMode.Adjust)

    def _width(self) -> int:
        return max(40, self.view.viewport().width() - self.PAD)

    def initStyleOption(self, option, index):  # noqa: N802 (Qt)
        super().initStyleOption(option, index)
        first, _, rest = str(index.data() or "").partition("\n")
        first = option.fontMetrics.elidedText(first, Qt.TextElideMode.ElideMiddle, self._width())
        option.text = first + ("\u2028" + rest if rest else "")  # the line break Qt lays out
        option.features |= QStyleOptionViewItem.ViewItemFeature.WrapText

    def sizeHint(self, option, index):  # noqa: N802
        text = str(index.data() or "")
        fm = option.fontMetrics
        first, _, rest = text.partition("\n")
        height = fm.lineSpacing()
        if rest:
            height += fm.boundingRect(QRect(0, 0, self._width(), 100000), Qt.TextFlag.TextWordWrap, rest).height()
        return QSize(self._width(), height + self.PAD)
