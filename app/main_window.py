"""The main window: document queue, thumbnails, page view with overlay, Markdown, inspector, stats.

Files come in by drag and drop anywhere on the window, File > Open or the recent-files menu. Each
becomes a queued document; documents convert one at a time in a background worker
(``app.worker``), the rest of the window stays live. All engine results arrive as signals into the
GUI thread and update the page overlay, the Markdown pane and the statistics as they happen.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QIcon, QKeySequence, QPixmap
from PySide6.QtWidgets import (QFileDialog, QInputDialog, QLabel, QLineEdit, QListView, QListWidget,
                               QListWidgetItem, QMainWindow, QMessageBox, QProgressBar, QSplitter,
                               QStackedWidget, QTabWidget, QToolBar, QVBoxLayout, QWidget)

from app import navigation, progress, window_state
from app.conversion_control import ConversionControl
from app.document_state import DocumentState, DraftPreviewer
from app.draft_inspector import DraftInspector
from app.export_actions import ExportActions
from app.inspection import RegionInspection
from app.markdown_view import MarkdownView, map_spans
from app.model_check import MODEL_CONTROLS, app_message, check_model
from app.page_view import Legend, PageView, pil_to_qimage
from app.settings import AppSettings, SettingsDialog
from app.stats_panel import StatsPanel
from app.welcome import WelcomePanel
from app.worker import ConversionWorker, EngineCache, document_cache_dir

OPEN_FILTER = "Documents (*.pdf *.png *.jpg *.jpeg *.tif *.tiff *.bmp *.webp *.gif);;All files (*)"
VIEW_DPI = 110
MAX_VIEW_DPI = 400
THUMB_DPI = 16
STATUS_TEXT = {"queued": "waiting", "converting": "converting…", "done": "done", "cancelled": "cancelled",
               "failed": "failed", "open": "not converted"}


class MainWindow(ConversionControl, RegionInspection, ExportActions, QMainWindow):
    document_finished = Signal(str)     # status of a finished job ("done", "cancelled", "failed")
    error_shown = Signal(str)

    def __init__(self, settings: AppSettings | None = None, engines: EngineCache | None = None):
        super().__init__()
        self.app_settings = settings or AppSettings()
        self.engines = engines or EngineCache()  # tests share one, so the model loads once
        self.documents: list[DocumentState] = []
        self.current: DocumentState | None = None
        self.current_page: int | None = None
        self.running: DocumentState | None = None
        self.worker: ConversionWorker | None = None
        self.thread = None
        self.queue_paused = False
        self.follow = True
        self.last_error: str | None = None
        self.error_box: QMessageBox | None = None
        self._page_cache: OrderedDict = OrderedDict()
        self._thumb_todo: list[int] = []
        self._spans: list = []
        self.tracker = progress.ProgressTracker()
        self.previewer = DraftPreviewer(self)
        self.previewer.drafted.connect(self._preview_drafted)
        self._thumb_bases: dict[int, QPixmap] = {}
        self._quit_confirmed = False
        self.setWindowTitle("HSD Studio")
        self.setAcceptDrops(True)
        self._build_widgets()
        self._build_actions()
        window_state.fit_to_screen(self)
        window_state.restore_layout(self, self.app_settings.q)
        self._thumb_timer = QTimer(self)
        self._thumb_timer.setInterval(0)
        self._thumb_timer.timeout.connect(self._render_some_thumbnails)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._show_progress)
        self._update_actions()
        self._update_welcome()

    # -- construction -----------------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.queue = QListWidget()
        self.queue.setAcceptDrops(False)
        self.queue.currentRowChanged.connect(self._queue_row_changed)
        self.thumbs = QListWidget()
        self.thumbs.setViewMode(QListView.ViewMode.IconMode)
        self.thumbs.setFlow(QListView.Flow.TopToBottom)
        self.thumbs.setWrapping(False)
        self.thumbs.setIconSize(QSize(100, 130))
        self.thumbs.setGridSize(QSize(140, 160))
        self.thumbs.setUniformItemSizes(True)
        self.thumbs.setMovement(QListView.Movement.Static)
        self.thumbs.setResizeMode(QListView.ResizeMode.Adjust)
        self.thumbs.setStyleSheet("QListWidget::item:selected { background: #cfe3ff; color: #1a1a1a; }")
        self.thumbs.setAcceptDrops(False)
        self.thumbs.currentRowChanged.connect(self._thumb_row_changed)
        left = self.left_splitter = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(_titled("Documents", self.queue))
        left.addWidget(_titled("Pages", self.thumbs))
        left.setSizes([180, 600])

        self.page_view = PageView()
        self.page_view.region_clicked.connect(self.select_region)
        self._sharpen_timer = QTimer(self)
        self._sharpen_timer.setSingleShot(True)
        self._sharpen_timer.setInterval(250)
        self._sharpen_timer.timeout.connect(self._sharpen_page)
        self.page_view.zoom_changed.connect(lambda _z: self._sharpen_timer.start())
        self.page_view.zoom_changed.connect(self._show_zoom)
        self.legend = Legend()
        page_box = QWidget()
        page_layout = QVBoxLayout(page_box)
        page_layout.setContentsMargins(0, 0, 0, 0)
        self.welcome = WelcomePanel(self.app_settings.cache_dir().parent / "demo-model")
        self.welcome.model_chosen.connect(self.use_model)
        self.welcome.open_requested.connect(self.open_dialog)
        self.welcome.demo_failed.connect(lambda error: self.show_error("The demo model could not be built", error))
        self.page_stack = QStackedWidget()
        self.page_stack.addWidget(self.page_view)
        self.page_stack.addWidget(self.welcome)
        page_layout.addWidget(self.page_stack, 1)
        page_layout.addWidget(self.legend)

        self.markdown_view = MarkdownView()
        self.markdown_view.page_selection.connect(self._markdown_selection)
        source = getattr(self.markdown_view, "source", None)
        if source is not None:  # follow the page while the Markdown scrolls
            source.verticalScrollBar().valueChanged.connect(self._markdown_scrolled)
        self.inspector = DraftInspector()
        self.stats_panel = StatsPanel()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.inspector, "Draft inspector")
        self.bottom_tabs.addTab(self.stats_panel, "Statistics")
        right = self.right_splitter = QSplitter(Qt.Orientation.Vertical)
        markdown_box = _titled("Markdown", self.markdown_view)
        self.markdown_title = markdown_box.title
        right.addWidget(markdown_box)
        right.addWidget(self.bottom_tabs)
        right.setSizes([480, 320])

        main = self.main_splitter = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(left)
        main.addWidget(page_box)
        main.addWidget(right)
        main.setSizes([200, 600, 600])
        main.setStretchFactor(1, 1)
        main.setStretchFactor(2, 1)
        self.setCentralWidget(main)

        self.status_label = QLabel("Drop PDFs or images anywhere to convert them.")
        self.status_label.setWordWrap(True)  # a long message takes a second line, never cut mid-sentence
        self.status_label.setMinimumWidth(200)
        self.progress = QProgressBar()
        self.progress.setMinimumWidth(150)
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.setFormat("%v / %m pages")
        self.progress.setVisible(False)
        self.progress_label = QLabel()
        self.progress_label.setVisible(False)
        self.zoom_label = QLabel()
        self.zoom_label.setToolTip("Zoom (100 % = printed size)")
        self.settings_label = QLabel()
        self.settings_label.setStyleSheet("color: palette(placeholder-text)")
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress_label)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.zoom_label)
        self.statusBar().addPermanentWidget(self.settings_label)
        self._show_settings_summary()

    def _build_actions(self) -> None:
        def action(text, slot, shortcut=None, tip=None):
            a = QAction(text, self)
            a.triggered.connect(slot)
            if shortcut:
                a.setShortcut(QKeySequence(shortcut))
            if tip:
                a.setStatusTip(tip)
            return a

        self.open_action = action("&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.convert_action = action("&Convert", self.convert_current, "Ctrl+R",
                                     "Convert the selected document (finished pages are reused)")
        self.fresh_action = action("Convert from &scratch", lambda: self.convert_current(fresh=True), None,
                                   "Convert again, ignoring pages finished by an earlier run")
        self.cancel_action = action("C&ancel", self.cancel, "Esc", "Stop the running conversion")
        self.settings_action = action("&Settings…", self.edit_settings, "Ctrl+,")
        self.export_md_action = action("Export &Markdown…", self.export_markdown_dialog, "Ctrl+E")
        self.export_json_action = action("Export &JSON…", self.export_json_dialog, "Ctrl+Shift+E")
        self.copy_action = action("Copy Markdown", self.copy_markdown, "Ctrl+Shift+C",
                                  "Copy the Markdown shown (page or document) to the clipboard")
        self.zoom_in_action = action("Zoom in", self.page_view.zoom_in, QKeySequence.StandardKey.ZoomIn)
        self.zoom_out_action = action("Zoom out", self.page_view.zoom_out, QKeySequence.StandardKey.ZoomOut)
        self.zoom_fit_action = action("Fit page", self.page_view.zoom_fit, "Ctrl+0")
        self.fit_width_action = action("Fit width", self.page_view.zoom_fit_width, "Ctrl+9")
        self.next_action = action("Next page", lambda: self.step_page(1), "PgDown")
        self.prev_action = action("Previous page", lambda: self.step_page(-1), "PgUp")
        self.goto_action = action("&Go to page…", self.go_to_page_dialog, "Ctrl+G")
        self.overlay_action = action("Show region &overlay", self.page_view.set_overlay_visible, "Ctrl+Shift+O",
                                     "Draw the drafter's regions, coloured by how much of each draft was accepted")
        self.overlay_action.setIconText("Overlay")
        self.overlay_action.setCheckable(True)
        self.overlay_action.setChecked(True)
        self.labels_action = action("Show region &labels", self.page_view.set_labels_visible, "Ctrl+Shift+L",
                                    "Write each region's number and kind on the page")
        self.labels_action.setCheckable(True)
        self.shortcuts_action = action("&Keyboard shortcuts", self.show_shortcuts, "F1")
        self.about_action = action("&About HSD Studio", self.show_about)
        self.demo_action = action("Build the tiny &demo model", self.build_demo_model, None,
                                  "Build a tiny random model here (no download) to try the app; its text is random")
        self.remove_action = action("Remove from queue", self.remove_current, None,
                                    "Take the selected document out of the list (not while it converts)")
        self.quit_action = quit_action = action("&Quit", self.close, QKeySequence.StandardKey.Quit)

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        file_menu.addSeparator()
        file_menu.addAction(self.export_md_action)
        file_menu.addAction(self.export_json_action)
        file_menu.addAction(self.copy_action)
        file_menu.addSeparator()
        file_menu.addAction(quit_action)
        convert_menu = self.menuBar().addMenu("&Convert")
        for a in (self.convert_action, self.fresh_action, self.cancel_action, self.settings_action):
            convert_menu.addAction(a)
        view_menu = self.menuBar().addMenu("&View")
        for a in (self.zoom_in_action, self.zoom_out_action, self.zoom_fit_action, self.fit_width_action,
                  None, self.prev_action, self.next_action, self.goto_action, None, self.overlay_action,
                  self.labels_action):
            view_menu.addAction(a) if a else view_menu.addSeparator()
        help_menu = self.menuBar().addMenu("&Help")
        for a in (self.shortcuts_action, self.demo_action, self.about_action):
            help_menu.addAction(a)
        convert_menu.addSeparator()
        convert_menu.addAction(self.remove_action)

        toolbar = QToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.setMovable(False)
        for a in (self.open_action, self.convert_action, self.cancel_action, self.settings_action):
            toolbar.addAction(a)
        toolbar.addSeparator()
        for a in (self.export_md_action, self.export_json_action, self.copy_action):
            toolbar.addAction(a)
        toolbar.addSeparator()
        for a in (self.zoom_out_action, self.zoom_fit_action, self.fit_width_action, self.zoom_in_action):
            toolbar.addAction(a)
        toolbar.addSeparator()
        toolbar.addAction(self.overlay_action)
        self.addToolBar(toolbar)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.app_settings.recent_files()
        for path in files:
            a = self.recent_menu.addAction(path)
            a.triggered.connect(lambda checked=False, p=path: self.add_files([p]))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", self.app_settings.clear_recent)
        else:
            self.recent_menu.addAction("(none)").setEnabled(False)

    # -- files in ---------------------------------------------------------------------------------

    def dragEnterEvent(self, event):  # noqa: N802 (Qt)
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    dragMoveEvent = dragEnterEvent

    def dropEvent(self, event):  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.add_files(paths)

    def open_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open documents", self._last_dir(), OPEN_FILTER)
        if paths:
            window_state.set_last_folder(self.app_settings.q, str(Path(paths[0]).parent))
            self.add_files(paths)

    def _last_dir(self) -> str:
        remembered = window_state.last_folder(self.app_settings.q)
        if remembered and Path(remembered).is_dir():
            return remembered
        recent = self.app_settings.recent_files()
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def add_files(self, paths, convert: bool = True) -> list[DocumentState]:
        """Open and queue documents; a file that cannot be opened shows an error and is skipped."""
        from core.api import open_document
        from core.errors import EncryptedDocumentError, HSDError

        if convert and not self.model_ready():
            convert = False
            self.set_status(f"No model yet: the drafts are shown; choose a model in {MODEL_CONTROLS} to convert")
        added = []
        for raw in paths:
            path = Path(raw)
            password = None
            while True:
                try:
                    doc = open_document(path, password=password)
                    break
                except EncryptedDocumentError as exc:
                    password = self.ask_password(path, str(exc))
                    if password is None:
                        doc = None
                        break
                except HSDError as exc:
                    self.show_error(f"Cannot open {path.name}", str(exc))
                    doc = None
                    break
                except OSError as exc:
                    self.show_error(f"Cannot open {path.name}", exc.strerror or str(exc))
                    doc = None
                    break
            if doc is None:
                continue
            state = DocumentState(path=path.resolve(), page_count=doc.page_count, doc=doc,
                                  status="queued" if convert else "open", password=password)
            self.documents.append(state)
            item = QListWidgetItem()
            self.queue.addItem(item)
            self._update_queue_item(state)
            self.app_settings.add_recent(str(path))
            added.append(state)
        if added:
            self._update_welcome()
            self.queue.setCurrentRow(self.documents.index(added[0]))
            if convert:
                self.queue_paused = False
                self._start_next()
        self._update_actions()
        return added

    def ask_password(self, path: Path, message: str) -> str | None:
        text, ok = QInputDialog.getText(self, "Password", f"{path.name} is encrypted. Password:",
                                        QLineEdit.EchoMode.Password)
        return text if ok else None

    # -- showing documents and pages --------------------------------------------------------------

    def _queue_row_changed(self, row: int) -> None:
        if 0 <= row < len(self.documents):
            self.show_document(self.documents[row])

    def show_document(self, doc: DocumentState) -> None:
        if self.current is doc:
            return
        self.current = doc
        self.setWindowTitle(f"{doc.name} — HSD Studio")
        self.current_page = None
        self._page_cache.clear()
        self._thumb_bases.clear()
        self.page_view.reset_zoom()
        self.thumbs.blockSignals(True)
        self.thumbs.clear()
        placeholder = QPixmap(100, 130)
        placeholder.fill(QColor(250, 250, 250))
        self._placeholder_thumb = placeholder
        for i in range(doc.page_count):
            item = QListWidgetItem(QIcon(placeholder), f"{i + 1}")
            item.setTextAlignment(Qt.AlignmentFlag.AlignHCenter)
            self.thumbs.addItem(item)
            self._mark_thumbnail(doc, i + 1)
        self.thumbs.blockSignals(False)
        self._thumb_todo = list(range(doc.page_count))
        self._thumb_timer.start()
        self.stats_panel.set_results(list(doc.results.values()))
        first = min(doc.results) if doc.results else 1
        self.show_page(first)
        self._update_actions()

    def _render_some_thumbnails(self, count: int = 3) -> None:
        doc = self.current
        if doc is None or not self._thumb_todo:
            self._thumb_timer.stop()
            return
        for _ in range(count):
            if not self._thumb_todo:
                break
            i = self._thumb_todo.pop(0)
            try:
                image = doc.doc.page(i).render(THUMB_DPI * 2)
            except Exception:
                continue
            self._thumb_bases[i + 1] = QPixmap.fromImage(pil_to_qimage(image))
            self._mark_thumbnail(doc, i + 1)

    def _mark_all_thumbnails(self) -> None:
        if self.current is not None:
            for page in range(1, self.current.page_count + 1):
                self._mark_thumbnail(self.current, page)

    def _mark_thumbnail(self, doc: DocumentState, page: int) -> None:
        """The page's state in its label, its frame colour (acceptance colour once done) and tooltip."""
        if doc is not self.current:
            return
        item = self.thumbs.item(page - 1)
        if item is None:
            return
        state = progress.page_state(doc, page)
        label = progress.STATE_LABEL[state]
        mark = {"done": " ✓", "failed": " ✗", "warning": " ⚠"}.get(state, "")
        item.setText(f"{page}{mark}" + (f"\n{label}" if label and state != "done" else ""))
        item.setToolTip(progress.thumbnail_tooltip(doc, page, state))
        item.setData(Qt.ItemDataRole.UserRole, state)
        base = self._thumb_bases.get(page) or getattr(self, "_placeholder_thumb", None)
        if base is not None:
            item.setIcon(progress.thumbnail_icon(base, state, progress.state_color(doc, page, state)))

    def _thumb_row_changed(self, row: int) -> None:
        if row >= 0 and self.current is not None:
            if self.current is self.running:
                self.follow = False  # the user looks elsewhere: stop following the conversion
            self.show_page(row + 1)

    def show_page(self, page: int, follow: bool = False) -> None:
        doc = self.current
        if doc is None or not 1 <= page <= doc.page_count:
            return
        self.current_page = page
        if self.thumbs.currentRow() != page - 1:
            self.thumbs.blockSignals(True)
            self.thumbs.setCurrentRow(page - 1)
            self.thumbs.blockSignals(False)
        try:
            image = self._page_image(doc, page)
        except Exception as exc:
            self.page_view.show_message(f"Page {page} cannot be shown:\n{exc}")
            return
        p = doc.doc.page(page - 1)
        self.page_view.set_page(image, p.width, p.height)
        self._show_overlay()
        self._show_document_text()
        self.inspector.clear()
        self._request_preview(doc, page)

    def step_page(self, delta: int) -> None:
        if self.current is not None and self.current_page is not None:
            page = self.current_page + delta
            if 1 <= page <= self.current.page_count:
                if self.current is self.running:
                    self.follow = False
                self.show_page(page)

    def remove_current(self) -> None:
        doc = self.current
        if doc is None or doc is self.running:
            return
        row = self.documents.index(doc)
        self.documents.pop(row)
        try:
            doc.doc.close()
        except Exception:
            pass
        self.current = None
        self.queue.takeItem(row)
        if not self.documents:
            self.thumbs.clear()
            self.page_view.show_message("Drop PDFs or images here\nor use File > Open")
            self.markdown_view.set_texts("", "")
            self.inspector.clear()
            self.stats_panel.set_results([])
            self.setWindowTitle("HSD Studio")
        else:
            self.queue.setCurrentRow(min(row, len(self.documents) - 1))
            if self.current is None:
                self.show_document(self.documents[self.queue.currentRow()])
        self._update_actions()

    def _page_image(self, doc: DocumentState, page: int, dpi: int = VIEW_DPI):
        key = (str(doc.path), page)
        cached = self._page_cache.get(key)
        if cached is None or cached[0] < dpi:
            cached = (dpi, pil_to_qimage(doc.doc.page(page - 1).render(dpi)))
            self._page_cache[key] = cached
            while len(self._page_cache) > 6:
                self._page_cache.popitem(last=False)
        self._page_cache.move_to_end(key)
        return cached[1]

    def _sharpen_page(self) -> None:
        """After zooming in, render the page again at the resolution the screen now shows it."""
        doc, page = self.current, self.current_page
        if doc is None or page is None or self.page_view.page_item is None:
            return
        width_pt = self.page_view.sceneRect().width()
        shown_px = width_pt * self.page_view.zoom * self.page_view.devicePixelRatioF()
        if shown_px <= self.page_view.image_width * 1.2:
            return
        dpi = int(min(MAX_VIEW_DPI, 72.0 * shown_px / width_pt))
        try:
            self.page_view.replace_image(self._page_image(doc, page, dpi))
        except Exception:
            pass  # the softer image stays

    def _show_overlay(self) -> None:
        doc, page = self.current, self.current_page
        if doc is None or page is None:
            return
        mode = (doc.settings or self.app_settings.conversion()).mode
        regions, stats = self._page_regions(doc, page)
        self.page_view.set_regions(regions, stats, mode)

    def _page_regions(self, doc: DocumentState, page: int):
        """(regions, stats) shown on a page: converted, converting, cancelled (partial) or drafted only."""
        result = doc.results.get(page)
        if result is not None:
            return result.regions, result.region_stats
        if page in doc.live_regions:
            return doc.live_regions[page]
        if page in doc.partial_pages:
            return doc.partial_pages[page][:2]
        return doc.preview_regions.get(page, []), None

    def _request_preview(self, doc: DocumentState, page: int) -> None:
        """Draft a page nothing has drafted yet (no model needed), to show its regions at once."""
        if page in doc.results or page in doc.live_regions or page in doc.partial_pages or page in doc.preview_regions:
            return
        doc.preview_regions[page] = []  # requested once
        self.previewer.request(doc.path, doc.password, page, self.app_settings.conversion().drafter)

    def _preview_drafted(self, path: str, page: int, regions) -> None:
        doc = next((d for d in self.documents if str(d.path) == path), None)
        if doc is None or isinstance(regions, str):
            return
        doc.preview_regions[page] = regions
        if doc is self.current and self.current_page == page and not (
                page in doc.results or page in doc.live_regions or page in doc.partial_pages):
            self._show_overlay()

    def _show_document_text(self, live: bool = False) -> None:
        doc, page = self.current, self.current_page
        if doc is None:
            self.markdown_view.set_texts("", "")
            return
        self.markdown_view.set_base_dir(doc.markdown_path.parent if doc.markdown_path else
                                        document_cache_dir(self.app_settings.cache_dir(), doc.path))
        page_text = doc.page_markdown(page) if page else ""
        partial = " — partial: cancelled on this page" if page in doc.partial_pages else ""
        self.markdown_title.setText(f"<b>Markdown</b>{partial}")
        self.markdown_view.set_texts(page=page_text, document=doc.document_markdown(), live=live)
        result = doc.results.get(page) if page else None
        self._spans = map_spans(result, page_text) if result is not None else []

    # -- settings, status, errors -----------------------------------------------------------------

    def edit_settings(self) -> None:
        dialog = SettingsDialog(self.app_settings.conversion(), self)
        if dialog.exec():
            self.app_settings.set_conversion(dialog.settings())
            self._show_settings_summary()
            self._update_welcome()
            self.set_status("Settings saved; they apply to the next conversion")

    # -- model, welcome, help ---------------------------------------------------------------------

    def model_ready(self) -> bool:
        """A model is configured (its errors are reported when it loads), or the default one is here."""
        return bool(self.app_settings.conversion().model.strip()) or check_model("").ok

    def _update_welcome(self) -> None:
        welcome = not self.documents and not self.model_ready()
        self.page_stack.setCurrentWidget(self.welcome if welcome else self.page_view)
        self.legend.setVisible(not welcome)

    def use_model(self, model: str) -> None:
        conversion = self.app_settings.conversion()
        conversion.model = model
        self.app_settings.set_conversion(conversion)
        self._show_settings_summary()
        self._update_welcome()
        self.set_status(f"Model set to {model}; open or drop a PDF to convert it")

    def build_demo_model(self) -> None:
        self.set_status("Building the tiny demo model (a few seconds)…")
        self.welcome.build_demo()

    def go_to_page_dialog(self) -> None:
        if self.current is not None:
            page = navigation.ask_page(self, self.current_page or 1, self.current.page_count)
            if page is not None:
                self.go_to_page(page)

    def go_to_page(self, page: int) -> None:
        if self.current is not None and 1 <= page <= self.current.page_count:
            if self.current is self.running:
                self.follow = False
            self.show_page(page)

    def _show_zoom(self, _zoom: float) -> None:
        self.zoom_label.setText(f"{navigation.zoom_percent(self.page_view)} %")

    def show_shortcuts(self) -> None:
        self.help_dialog = navigation.info_dialog(self, "Keyboard shortcuts",
                                                  navigation.shortcuts_html(self.findChildren(QAction)))

    def show_about(self) -> None:
        self.help_dialog = navigation.info_dialog(self, "About HSD Studio",
                                                  navigation.about_html(self.app_settings.conversion().model))

    def splitters(self) -> dict:
        return {"main": self.main_splitter, "left": self.left_splitter, "right": self.right_splitter}

    def _show_settings_summary(self) -> None:
        self.settings_label.setText(self.app_settings.conversion().summary())

    def set_status(self, text: str) -> None:
        self.status_label.setText(text)
        self.status_label.setToolTip(text)

    def show_error(self, title: str, message: str) -> None:
        """A non-blocking dialog (the window stays live) and the status bar."""
        message = app_message(message)
        self.last_error = message
        self.set_status(f"{title}: {message}")
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.error_box = box
        self.error_shown.emit(message)

    def _update_queue_item(self, doc: DocumentState) -> None:
        if doc not in self.documents:
            return
        item = self.queue.item(self.documents.index(doc))
        if item is None:
            return
        pages = f"{doc.page_count} page{'s' if doc.page_count != 1 else ''}"
        item.setText(f"{doc.name}\n{pages} · {STATUS_TEXT.get(doc.status, doc.status)}")
        item.setToolTip(str(doc.path) + (f"\n{doc.error}" if doc.error else ""))

    def _update_actions(self) -> None:
        has_results = bool(self.current and self.current.results)
        self.cancel_action.setEnabled(self.busy)
        self.convert_action.setEnabled(self.current is not None and self.current is not self.running)
        self.fresh_action.setEnabled(self.convert_action.isEnabled())
        self.remove_action.setEnabled(self.convert_action.isEnabled())
        for a in (self.export_md_action, self.export_json_action):
            a.setEnabled(has_results)

    def confirm_quit(self) -> bool:
        """Ask before quitting mid-conversion (finished pages are kept; converting again resumes)."""
        doc = self.running
        done = len(doc.results) if doc else 0
        answer = QMessageBox.question(
            self, "Quit while converting?",
            f"{doc.name if doc else 'A document'} is converting ({done} page(s) finished). Quit anyway? "
            "Finished pages are kept and converting again resumes.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def closeEvent(self, event):  # noqa: N802
        if self.worker is not None and not self._quit_confirmed and not getattr(self, "_close_when_idle", False):
            if not self.confirm_quit():
                event.ignore()
                return
            self._quit_confirmed = True
        if self.isVisible():
            window_state.save_layout(self, self.app_settings.q)
        if self.worker is not None:
            # Cancel takes effect within one forward pass; loading a model cannot be interrupted,
            # so if the worker is still busy, hide now and close once it has stopped.
            self.queue_paused = True
            self.worker.cancel()
            if self.thread is not None and not self.thread.wait(3000):
                self._close_when_idle = True
                self.hide()
                event.ignore()
                return
        for doc in self.documents:
            try:
                doc.doc.close()
            except Exception:
                pass
        super().closeEvent(event)


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(2, 2, 2, 2)
    label = QLabel(f"<b>{title}</b>")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    box.title = label
    return box
