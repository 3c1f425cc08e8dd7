"""The page view: the rendered page, zoomable, with the drafter's regions drawn over it.

Scene coordinates are PDF points (the unit of ``Region.bbox``), so the page pixmap is scaled by
72 / dpi and regions are placed by their bboxes directly. Each region is coloured by its acceptance
rate on a continuous red-amber-green scale (``acceptance_color``); regions with nothing verified
are grey. Hovering shows the region's numbers; clicking emits ``region_clicked``.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QImage, QLinearGradient, QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import (QGraphicsRectItem, QGraphicsScene, QGraphicsSimpleTextItem, QGraphicsView,
                               QHBoxLayout, QLabel, QSizePolicy, QWidget)

RED = (214, 48, 49)
AMBER = (245, 166, 35)
GREEN = (39, 174, 96)
GREY = (150, 150, 150)
FILL_ALPHA = 60
#: Past this many regions on a page, labels go inside their regions unchecked (finding each a clear
#: spot compares it with every other region: quadratic).
MAX_PLACED_LABELS = 300


def acceptance_color(rate: float | None) -> QColor:
    """Continuous red (0) -> amber (0.5) -> green (1) colour of an acceptance rate; grey for None."""
    if rate is None:
        return QColor(*GREY)
    rate = max(0.0, min(1.0, float(rate)))
    if rate <= 0.5:
        a, b, t = RED, AMBER, rate / 0.5
    else:
        a, b, t = AMBER, GREEN, (rate - 0.5) / 0.5
    return QColor(*(round(x + (y - x) * t) for x, y in zip(a, b)))


def region_rate(stats, mode: str = "hsd") -> float | None:
    """The acceptance rate a region is coloured by: its Stage 1 rate where Stage 1 verified it on its
    crop; else, where the page pass took some of its draft (``hsd`` and ``page``), the share it took;
    None when nothing of it was verified (figures, empty drafts, ``ar`` mode, a draft the page
    accepted none of: rejected, or never reached on a page cut at the token limit)."""
    if stats is None or mode == "ar":
        return None
    if stats.verified and stats.drafted_tokens:
        return stats.acceptance_rate
    if mode in ("hsd", "page") and stats.drafted_tokens and stats.page_accepted_tokens:
        return min(1.0, stats.page_accepted_tokens / stats.drafted_tokens)
    return None


def unverified_reason(region, stats, mode: str = "hsd") -> str:
    """Why a region is grey, in a few words."""
    if stats is None:
        return "the page is still converting"
    if mode == "ar":
        return "plain decoding (ar mode) checks no drafts"
    if str(region.label) in ("figure", "image", "picture"):
        return "a figure: the model writes no text for it"
    if region.extra.get("unread"):  # drafted after its page's decode ended: only its box was found
        return "not read: the page's decode ended before the OCR reached it"
    if not stats.drafted_tokens:
        return "the draft was empty"
    if mode in ("hsd", "page"):
        return "the page took none of its draft (the model wrote other text here, or stopped before it)"
    return "the model did not check this draft"


def region_tooltip(index: int, region, stats, mode: str = "hsd") -> str:
    lines = [f"<b>Region {index + 1}: {html.escape(label_name(region.label))}</b>"]
    if stats is None:
        lines.append("drafted; not verified yet (the page is converting or not converted)")
    else:
        rate = region_rate(stats, mode)
        lines.append(f"drafted tokens: {stats.drafted_tokens}")
        lines.append(f"accepted tokens: {stats.accepted_tokens}")
        if stats.page_accepted_tokens:
            lines.append(f"accepted on the page: {stats.page_accepted_tokens}")
        lines.append(f"forward passes: {stats.forward_passes}")
        lines.append("acceptance: " + (f"not verified ({unverified_reason(region, stats, mode)})" if rate is None
                                       else f"{rate:.0%}"))
        if stats.fallback:
            lines.append("output degenerated: the raw draft was used")
    return "<br>".join(lines)


class RegionItem(QGraphicsRectItem):
    def __init__(self, index: int, region, stats=None, mode: str = "hsd"):
        x0, y0, x1, y1 = region.bbox
        super().__init__(QRectF(x0, y0, max(1.0, x1 - x0), max(1.0, y1 - y0)))
        self.index = index
        self.region = region
        self.highlighted = False
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.set_stats(stats, mode)

    def set_stats(self, stats, mode: str = "hsd") -> None:
        self.stats = stats
        self.rate = region_rate(stats, mode)
        self.color = acceptance_color(self.rate)
        fill = QColor(self.color)
        fill.setAlpha(FILL_ALPHA)
        self.setBrush(QBrush(fill))
        self._apply_pen(self.highlighted)  # new numbers keep a selected region selected
        self.setToolTip(region_tooltip(self.index, self.region, stats, mode))

    def _apply_pen(self, highlight: bool) -> None:
        pen = QPen(QColor(20, 90, 200) if highlight else self.color, 3.0 if highlight else 1.2)
        pen.setCosmetic(True)
        if self.stats is None:
            pen.setStyle(Qt.PenStyle.DashLine)
        self.setPen(pen)

    def set_highlighted(self, on: bool) -> None:
        self.highlighted = on
        self._apply_pen(on)
        self.setZValue(2 if on else 1)


#: A region's kind in words (the drafters' labels are identifiers).
LABEL_NAMES = {"page_number": "page number", "header": "page header", "footer": "page footer"}


def label_name(label) -> str:
    """``page_number`` -> ``page number``: a region's kind as the window writes it."""
    label = str(label)
    return LABEL_NAMES.get(label, label.replace("_", " "))


class RegionLabel(QGraphicsSimpleTextItem):
    """A region's number and kind on a light backing so it reads over the page. Its size is in screen
    pixels (it ignores the zoom); ``PageView.place_labels`` puts it where it hides no text."""

    def _text_rect(self) -> QRectF:
        return super().boundingRect()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt)
        return self._text_rect().adjusted(-2, 0, 2, 0)

    def paint(self, painter, option, widget=None):
        painter.fillRect(self.boundingRect(), QColor(255, 255, 255, 215))
        super().paint(painter, option, widget)


class PageView(QGraphicsView):
    """Zoomable page with the region overlay. ``zoom_fit`` keeps the page fitted on resize."""

    region_clicked = Signal(int)
    background_clicked = Signal()   # a click on the page outside every region (not a drag)
    zoom_changed = Signal(float)
    view_moved = Signal()           # the page scrolled or zoomed: what is in view changed
    region_menu_requested = Signal(int, object)  # a right click on region (index) at a global QPoint

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.SmoothPixmapTransform)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self._follow_palette()
        self.setAcceptDrops(False)
        self.viewport().setAcceptDrops(False)
        self.page_item = None
        self.region_items: list[RegionItem] = []
        self.mode = "hsd"
        self._fit = True
        self._zoom = 1.0
        self._highlight: int | None = None
        self._placeholder = None
        self.label_items: list[QGraphicsSimpleTextItem] = []
        self.overlay_visible = True
        self.labels_visible = False
        self._fit_width = False
        self.verticalScrollBar().valueChanged.connect(lambda _v: self.view_moved.emit())
        self.horizontalScrollBar().valueChanged.connect(lambda _v: self.view_moved.emit())
        self.show_message("Drop PDFs or images here\nor use File > Open")

    # -- content ----------------------------------------------------------------------------------

    def _follow_palette(self) -> None:
        """A backdrop a shade off the window's, light or dark, so the white page stands out in both."""
        from app.widgets import is_dark

        self.setBackgroundBrush(QColor(70, 70, 70) if is_dark(self) else QColor(236, 236, 236))
        if getattr(self, "_placeholder", None) is not None:
            self._placeholder.setBrush(self.palette().color(QPalette.ColorRole.PlaceholderText))

    def changeEvent(self, event):  # noqa: N802 (Qt)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._follow_palette()

    def show_message(self, text: str) -> None:
        self.clear_page()
        item = QGraphicsSimpleTextItem(text)
        font = QFont()
        font.setPointSize(16)
        item.setFont(font)
        item.setBrush(self.palette().color(QPalette.ColorRole.PlaceholderText))
        self.scene().addItem(item)
        self._placeholder = item
        self.scene().setSceneRect(item.boundingRect().adjusted(-40, -40, 40, 40))
        self.resetTransform()
        self._zoom = 1.0

    def clear_page(self) -> None:
        # removeItem hands each item back to Python, which deletes it once the last reference goes.
        # QGraphicsScene.clear() would delete them in C++ behind wrappers this view still holds,
        # and a wrapper PySide believes it owns then deletes its item a second time (a crash).
        scene = self.scene()
        for item in scene.items():
            scene.removeItem(item)
        self.page_item = None
        self.region_items = []
        self.label_items = []
        self._placeholder = None
        self._highlight = None

    def set_page(self, image, width_pt: float, height_pt: float) -> None:
        """Show a rendered page (PIL image or QImage) of ``width_pt`` x ``height_pt`` points."""
        self.clear_page()
        qimage = image if isinstance(image, QImage) else pil_to_qimage(image)
        pixmap = QPixmap.fromImage(qimage)
        self.page_item = self.scene().addPixmap(pixmap)
        self.page_item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        if pixmap.width():
            self.page_item.setScale(width_pt / pixmap.width())
        self.page_item.setZValue(0)
        self.scene().setSceneRect(QRectF(0, 0, width_pt, height_pt))
        if self._fit:
            self.zoom_fit_width() if self._fit_width else self.zoom_fit()
        else:
            self._apply_zoom()

    def replace_image(self, image) -> None:
        """Swap in a sharper (or softer) rendering of the same page, keeping regions and zoom."""
        if self.page_item is None:
            return
        qimage = image if isinstance(image, QImage) else pil_to_qimage(image)
        pixmap = QPixmap.fromImage(qimage)
        self.page_item.setPixmap(pixmap)
        if pixmap.width():
            self.page_item.setScale(self.sceneRect().width() / pixmap.width())

    @property
    def image_width(self) -> int:
        return self.page_item.pixmap().width() if self.page_item is not None else 0

    def set_regions(self, regions, stats=None, mode: str = "hsd") -> None:
        """Draw ``regions``; ``stats`` (one per region, or None while not yet verified) colour them."""
        for item in self.region_items + self.label_items:
            self.scene().removeItem(item)
        self.mode = mode
        self.region_items = []
        self.label_items = []
        for i, region in enumerate(regions):
            item = RegionItem(i, region, stats[i] if stats and i < len(stats) else None, mode)
            item.setZValue(1)
            item.setVisible(self.overlay_visible)
            self.scene().addItem(item)
            self.region_items.append(item)
            label = RegionLabel(f"{i + 1} {label_name(region.label)}")
            label.setFont(_label_font())
            label.setBrush(QColor(20, 20, 20))
            label.setFlag(QGraphicsSimpleTextItem.GraphicsItemFlag.ItemIgnoresTransformations)
            label.setPos(region.bbox[0], region.bbox[1])
            label.setZValue(3)
            label.setVisible(self.overlay_visible and self.labels_visible)
            self.scene().addItem(label)
            self.label_items.append(label)
        self._highlight = None
        self.place_labels()

    def place_labels(self) -> None:
        """Put each region's label where it hides no text, inside the page: in the margin beside the
        region's first line (left, else right), else above the region where that is clear of the
        others, else inside its top-left corner. Labels keep their screen size, so their place
        changes with the zoom."""
        if not self.label_items or self.page_item is None or not (self.labels_visible and self.overlay_visible):
            return  # placed when shown
        zoom = self.transform().m11() or 1.0
        crowded = len(self.label_items) > MAX_PLACED_LABELS
        page = self.sceneRect()
        boxes = [item.rect() for item in self.region_items]
        placed: list[QRectF] = []
        for i, label in enumerate(self.label_items):
            size = label.boundingRect()
            w, h = size.width() / zoom, size.height() / zoom
            box = boxes[i]
            top = min(max(page.top(), box.top()), page.bottom() - h)
            candidates = [QPointF(box.left() - w - 2 / zoom, top), QPointF(box.right() + 2 / zoom, top),
                          QPointF(box.left(), box.top() - h - 1 / zoom)]

            def fits(point):
                rect = QRectF(point.x(), point.y(), w, h)
                if not page.contains(rect):
                    return False
                return not any(rect.intersects(b) for j, b in enumerate(boxes) if j != i) and \
                    not any(rect.intersects(p) for p in placed)

            spot = None if crowded else next((p for p in candidates if fits(p)), None)
            if spot is None:  # nowhere clear: inside the region, within the page
                spot = QPointF(min(max(page.left(), box.left()), page.right() - w), top)
            label.setPos(spot.x() - size.left() / zoom, spot.y() - size.top() / zoom)
            placed.append(QRectF(spot.x(), spot.y(), w, h))

    def set_overlay_visible(self, on: bool) -> None:
        self.overlay_visible = bool(on)
        for item in self.region_items:
            item.setVisible(self.overlay_visible)
        self.set_labels_visible(self.labels_visible)

    def set_labels_visible(self, on: bool) -> None:
        self.labels_visible = bool(on)
        for item in self.label_items:
            item.setVisible(self.overlay_visible and self.labels_visible)
        self.place_labels()

    def update_region(self, index: int, stats) -> None:
        if 0 <= index < len(self.region_items):
            self.region_items[index].set_stats(stats, self.mode)

    def highlight_region(self, index: int | None, center: bool = False) -> None:
        if self._highlight is not None and self._highlight < len(self.region_items):
            self.region_items[self._highlight].set_highlighted(False)
        self._highlight = index
        if index is not None and 0 <= index < len(self.region_items):
            self.region_items[index].set_highlighted(True)
            if center:
                self._bring_into_view(self.region_items[index].sceneBoundingRect())

    def _bring_into_view(self, rect: QRectF, margin_px: float = 20) -> None:
        """Show ``rect``: left where it is in view, else its middle in the view's middle; one wider
        or taller than the view shows where its text begins (its left and top), not its middle."""
        view = self.mapToScene(self.viewport().rect()).boundingRect()
        if view.contains(rect):
            return
        margin = margin_px / max(self.transform().m11(), 1e-6)
        x = (rect.center().x() if rect.width() + 2 * margin <= view.width()
             else rect.left() - margin + view.width() / 2)
        y = (rect.center().y() if rect.height() + 2 * margin <= view.height()
             else rect.top() - margin + view.height() / 2)
        self.centerOn(x, y)

    @property
    def highlighted(self) -> int | None:
        return self._highlight

    def region_in_view(self) -> int | None:
        """The region a reader of the visible part of the page reads first: the first region, in
        the drafter's reading order, that shows in the view's upper half (else anywhere in it)."""
        if not self.region_items:
            return None
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        upper = QRectF(visible.left(), visible.top(), visible.width(), visible.height() / 2)
        for area in (upper, visible):
            for item in self.region_items:
                if item.sceneBoundingRect().intersects(area):
                    return item.index
        return None

    # -- zoom -------------------------------------------------------------------------------------

    def zoom_fit(self) -> None:
        """Fit the whole page (kept on resize)."""
        self._fit, self._fit_width = True, False
        if self.page_item is None:
            return
        self.fitInView(self.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self._zoom = self.transform().m11()
        self.place_labels()
        self.zoom_changed.emit(self._zoom)

    def zoom_fit_width(self) -> None:
        """Fit the page's width (kept on resize), starting at its top."""
        self._fit, self._fit_width = True, True
        if self.page_item is None:
            return
        bar = self.verticalScrollBar().sizeHint().width()
        width = max(1, self.viewport().width() - bar - 4)
        self._zoom = max(0.1, min(12.0, width / max(1.0, self.sceneRect().width())))
        self.resetTransform()
        self.scale(self._zoom, self._zoom)
        self.centerOn(self.sceneRect().center().x(), 0)
        self.place_labels()
        self.zoom_changed.emit(self._zoom)

    def reset_zoom(self) -> None:
        """A new document starts fitted, whatever the last one was zoomed to."""
        self._fit, self._fit_width = True, False

    def zoom_by(self, factor: float) -> None:
        centre = self.mapToScene(self.viewport().rect().center())
        self._fit = self._fit_width = False
        self._zoom = max(0.1, min(12.0, self._zoom * factor))
        self._apply_zoom()
        self.centerOn(centre)  # the point in the middle stays in the middle

    def zoom_in(self) -> None:
        self.zoom_by(1.25)

    def zoom_out(self) -> None:
        self.zoom_by(0.8)

    @property
    def zoom(self) -> float:
        return self._zoom

    def _apply_zoom(self) -> None:
        self.resetTransform()
        self.scale(self._zoom, self._zoom)
        self.place_labels()
        self.zoom_changed.emit(self._zoom)

    def wheelEvent(self, event):  # noqa: N802 (Qt)
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoom_by(1.15 if event.angleDelta().y() > 0 else 1 / 1.15)
            event.accept()
        else:
            super().wheelEvent(event)

    def resizeEvent(self, event):  # noqa: N802
        super().resizeEvent(event)
        if self._fit:
            self.zoom_fit_width() if self._fit_width else self.zoom_fit()

    def _region_at(self, point) -> "RegionItem | None":
        # Not itemAt(...).parentItem(): on a top-level item PySide's parentItem() passes the item's
        # ownership to Python, and the page item would later be deleted twice.
        return next((i for i in self.items(point) if isinstance(i, RegionItem) and i.isVisible()), None)

    def mousePressEvent(self, event):  # noqa: N802
        self._pressed_at = event.position().toPoint()
        item = self._region_at(self._pressed_at)
        if item is not None:
            self.highlight_region(item.index)
            self.region_clicked.emit(item.index)
        super().mousePressEvent(event)

    def contextMenuEvent(self, event):  # noqa: N802 (Qt)
        """A right click on a region asks for its menu (its actions are the window's)."""
        item = self._region_at(event.pos())
        if item is None:
            super().contextMenuEvent(event)
            return
        event.accept()
        self.region_menu_requested.emit(item.index, event.globalPos())

    def mouseReleaseEvent(self, event):  # noqa: N802
        super().mouseReleaseEvent(event)
        pressed, self._pressed_at = getattr(self, "_pressed_at", None), None
        point = event.position().toPoint()
        if (pressed is not None and (point - pressed).manhattanLength() < 4 and self.page_item is not None
                and self._region_at(point) is None):
            self.background_clicked.emit()


def _label_font() -> QFont:
    font = QFont()
    font.setPointSize(8)
    font.setBold(True)
    return font


def pil_to_qimage(image) -> QImage:
    image = image.convert("RGB")
    data = image.tobytes("raw", "RGB")
    qimage = QImage(data, image.width, image.height, 3 * image.width, QImage.Format.Format_RGB888)
    return qimage.copy()  # own the pixels: ``data`` goes away


NOT_VERIFIED_TIP = ("Grey: nothing of this region's draft was checked by the model: a figure (the model "
                    "writes no text for it), an empty draft or plain decoding (ar mode). A dashed outline: "
                    "not verified yet (the page is converting or not converted). Hover a region for its numbers.")


class Legend(QWidget):
    """The colour scale: a red-amber-green gradient from 0 % to 100 % accepted, and grey explained.

    Text uses the palette's own colours (no fixed black or white), so it reads in light and dark
    themes alike."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        self.labels = [QLabel("Regions, draft accepted:"), QLabel("0%"), QLabel("100%"), QLabel("not verified")]
        layout.addWidget(self.labels[0])
        layout.addWidget(self.labels[1])
        self.bar = _GradientBar()
        layout.addWidget(self.bar, 1)
        layout.addWidget(self.labels[2])
        self.grey = QLabel("■")
        self.grey.setStyleSheet(f"color: rgb{GREY}")
        layout.addSpacing(8)
        layout.addWidget(self.grey)
        layout.addWidget(self.labels[3], 1)
        for widget in (self.grey, self.labels[3]):
            widget.setToolTip(NOT_VERIFIED_TIP)
        self.labels[3].setWordWrap(True)  # wraps on a narrow window rather than widening it
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)


class _GradientBar(QWidget):
    def __init__(self):
        super().__init__()
        self.setMinimumSize(60, 12)
        self.setMaximumHeight(14)

    def paintEvent(self, event):  # noqa: N802
        painter = QPainter(self)
        rect = self.rect().adjusted(0, 1, -1, -1)
        gradient = QLinearGradient(QPointF(rect.left(), 0), QPointF(rect.right(), 0))
        for stop in (0.0, 0.25, 0.5, 0.75, 1.0):
            gradient.setColorAt(stop, acceptance_color(stop))
        painter.fillRect(rect, gradient)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawRect(rect)
        painter.end()
