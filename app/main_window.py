"""The main window: document list, page thumbnails, page view with overlay, Markdown, inspector, stats.

Files come in by drag and drop anywhere on the window, File > Open or the recent-files menu. Each
becomes a document in the list. The window is a view: its conversion controller
(``app.conversion``) runs the queue in a background worker and keeps each page's record; the
window redraws what the controller says changed. The shown page and its selected region live in
``app.inspection``, the way to a usable model in ``app.model_flow``, export in
``app.export_actions``; every word about a page comes from ``app.page_story``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QFileDialog, QInputDialog, QLabel, QLineEdit, QListWidget, QListWidgetItem,
                               QMainWindow, QMenu, QMessageBox, QProgressBar, QSplitter, QStackedWidget,
                               QTabWidget, QToolBar, QVBoxLayout, QWidget)

from app import navigation, page_story, window_state
from app.conversion import ConversionController, release_freed_memory
from app.document_state import DocumentState, DocumentStatus, DraftPreviewer, PagePhase, PageState
from app.draft_inspector import DraftInspector
from app.export_actions import ExportActions
from app.inspection import PageInspection
from app.markdown_view import MarkdownView
from app.model_check import app_message
from app.model_flow import ModelSetup
from app.page_view import Legend, PageView, pil_to_qimage
from app.review_panel import ReviewPanel
from app.settings import AppSettings, SettingsDialog
from app.stats_panel import StatsPanel
from app.thumbnails import FrameLegend, PageList
from app.welcome import WelcomePanel
from app.widgets import ElidedLabel, NameFirstDelegate, StatusLine, ask_yes_no, plain_message_box, plain_tooltip
from app.worker import EngineCache, document_cache_dir

OPEN_FILTER = "Documents (*.pdf *.png *.jpg *.jpeg *.tif *.tiff *.bmp *.webp *.gif);;All files (*)"
VIEW_DPI = 110
MAX_VIEW_DPI = 400
#: Rendered pages kept for going back and forth: at most this many, and this many bytes.
PAGE_CACHE_PAGES = 6
PAGE_CACHE_BYTES = 64 * 2**20
#: After Yes to quitting mid-conversion, how long the window waits for the worker to stop (a cancel
#: takes one forward pass); past it the app exits anyway.
QUIT_WAIT_MS = 1000


class MainWindow(QMainWindow):
    error_shown = Signal(str)

    def __init__(self, settings: AppSettings | None = None, engines: EngineCache | None = None):
        super().__init__()
        self.app_settings = settings or AppSettings()
        self.documents: list[DocumentState] = []
        self.current: DocumentState | None = None
        self.current_page: int | None = None
        self.follow = True
        self.last_error: str | None = None
        self.error_box: QMessageBox | None = None
        self.quit_mid_conversion = False  # quit while converting: main() ends the process at once
        self._quit_confirmed = False
        self._page_cache: OrderedDict = OrderedDict()
        self.conversion = ConversionController(self.documents, self.app_settings, engines, self)
        self.exports = ExportActions(self)
        self.models = ModelSetup(self, self.app_settings.cache_dir().parent / "demo-model")
        self.previewer = DraftPreviewer(self)
        self.previewer.drafted.connect(self._preview_drafted)
        self._previewing: set = set()   # (document, page) whose preview drafter runs
        self._preview_clock = QTimer(self)
        self._preview_clock.setInterval(1000)
        self._preview_clock.timeout.connect(self._show_preview_progress)
        self.setWindowTitle("HSD Studio")
        self.setAcceptDrops(True)
        self._build_widgets()
        self._build_actions()
        self.inspection = PageInspection(self.page_view, self.markdown_view, self.inspector,
                                         lambda: self.bottom_tabs.setCurrentWidget(self.inspector), self)
        self.inspection.status.connect(self.set_status)
        self.inspection.review_panel = self.review_panel
        self.review_panel.departure_chosen.connect(self._show_departure)
        self._connect_conversion()
        self.models.model_changed.connect(self._model_changed)
        self.models.status.connect(self.set_status)
        self.models.failed.connect(self.show_error)
        self.models.connect_chooser(self.welcome.chooser)
        window_state.fit_to_screen(self)
        window_state.restore_layout(self, self.app_settings.q)
        self._update_actions()
        self._update_welcome()

    # -- construction -----------------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.queue = QListWidget()
        self.queue.setAcceptDrops(False)
        self.queue.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.queue.setItemDelegate(NameFirstDelegate(self.queue))
        self.queue.currentRowChanged.connect(self._queue_row_changed)
        self.queue.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.queue.customContextMenuRequested.connect(self._queue_menu)
        self.thumbs = PageList()
        self.thumbs.currentRowChanged.connect(self._thumb_row_changed)
        left = self.left_splitter = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(_titled("Documents", self.queue))
        left.addWidget(_titled("Pages", self.thumbs))
        left.setSizes([180, 600])

        self.page_view = PageView()
        self._sharpen_timer = QTimer(self)
        self._sharpen_timer.setSingleShot(True)
        self._sharpen_timer.setInterval(250)
        self._sharpen_timer.timeout.connect(self._sharpen_page)
        self.page_view.zoom_changed.connect(lambda _z: self._sharpen_timer.start())
        self.page_view.zoom_changed.connect(self._show_zoom)
        self.legend = Legend()
        self.frame_legend = FrameLegend()
        page_box = QWidget()
        page_layout = QVBoxLayout(page_box)
        page_layout.setContentsMargins(0, 0, 0, 0)
        self.welcome = WelcomePanel(self.app_settings.cache_dir().parent / "demo-model")
        self.welcome.open_requested.connect(self.open_dialog)
        self.page_stack = QStackedWidget()
        self.page_stack.addWidget(self.page_view)
        self.page_stack.addWidget(self.welcome)
        page_layout.addWidget(self.page_stack, 1)
        page_layout.addWidget(self.legend)
        page_layout.addWidget(self.frame_legend)

        self.markdown_view = MarkdownView()
        self.markdown_view.scope_changed.connect(lambda _scope: self._update_copy())
        from app.page_editing import PageEditActions

        self.page_edits = PageEditActions(self)  # the pane's page editor: edits kept, marked, exported
        self.inspector = DraftInspector()
        self.stats_panel = StatsPanel()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.inspector, "Draft inspector")
        self.bottom_tabs.addTab(self.stats_panel, "Statistics")
        self.review_panel = ReviewPanel()
        self.bottom_tabs.addTab(self.review_panel, "Review")
        right = self.right_splitter = QSplitter(Qt.Orientation.Vertical)
        self.markdown_title = ElidedLabel("Markdown", bold=True)
        right.addWidget(_titled(self.markdown_title, self.markdown_view))
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

        self.status_label = StatusLine("Drop PDFs or images anywhere to convert them.")
        self.progress = QProgressBar()
        self.progress.setFixedWidth(130)
        self.progress.setTextVisible(True)
        self.progress.setFormat("%v / %m pages")
        self.progress.setVisible(False)
        self.progress_label = ElidedLabel(mode=Qt.TextElideMode.ElideRight, min_chars=24)
        self.progress_label.setVisible(False)
        self.zoom_label = QLabel()
        self.zoom_label.setToolTip("Zoom (100 % = printed size)")
        self.settings_label = ElidedLabel(mode=Qt.TextElideMode.ElideRight, min_chars=10)
        self.settings_label.setStyleSheet("color: palette(placeholder-text)")
        # the message takes what the others leave; each shrinks to its elided minimum before wrapping
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
        self.convert_action = action("&Convert", lambda: self.convert_current(), "Ctrl+R",
                                     "Convert the selected document (finished pages are reused)")
        self.fresh_action = action("Convert from &scratch", lambda: self.convert_current(fresh=True), None,
                                   "Convert again, ignoring pages finished by an earlier run")
        self.page_again_action = action("Convert this &page again", self.page_edits.convert_page_again, None,
                                        "Convert the shown page again; the other pages are kept as they are")
        self.region_again_action = self.page_edits.region_again.action  # the page's regions' right-click menu too
        self.cancel_action = action("C&ancel", self.cancel_conversion, "Esc",
                                    "Stop the running conversion (asks first; finished pages are kept)")
        self.settings_action = action("&Settings…", self.edit_settings, "Ctrl+,")
        self.export_md_action = action("Export &Markdown…", self.exports.markdown_dialog, "Ctrl+E")
        self.export_json_action = action("Export &JSON…", self.exports.json_dialog, "Ctrl+Shift+E",
                                         "Regions, acceptance, statistics and where the model departs from the page")
        self.export_html_action = action("Export &HTML…", self.exports.html_dialog, None,
                                         "One HTML file, formulas typeset as MathML, figures inside")
        self.export_docx_action = action("Export &Word (DOCX)…", self.exports.docx_dialog, None,
                                         "A Word document, formulas as Word equations")
        self.export_batch_action = action("Export &all documents…", self.exports.batch_dialog, None,
                                          "Every converted document of the list, in chosen formats, into one folder")
        self.copy_action = action("Copy Markdown", self.exports.copy_markdown, "Ctrl+Shift+C",
                                  "Copy the Markdown shown (page or document) to the clipboard")
        self.zoom_in_action = action("Zoom in", self.page_view.zoom_in, QKeySequence.StandardKey.ZoomIn)
        self.zoom_out_action = action("Zoom out", self.page_view.zoom_out, QKeySequence.StandardKey.ZoomOut)
        self.zoom_fit_action = action("Fit page", self.page_view.zoom_fit, "Ctrl+0")
        self.fit_width_action = action("Fit width", self.page_view.zoom_fit_width, "Ctrl+9")
        self.next_action = action("Next page", lambda: self.step_page(1), "PgDown")
        self.prev_action = action("Previous page", lambda: self.step_page(-1), "PgUp")
        self.goto_action = action("&Go to page…", self.go_to_page_dialog, "Ctrl+G")
        self.next_departure_action = action("Next departure from the page", lambda: self._step_departure(1), "F8",
                                            "The next place where the model's words depart from the page's text")
        self.prev_departure_action = action("Previous departure from the page", lambda: self._step_departure(-1),
                                            "Shift+F8")
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
        self.remove_action = action("Remove from list", self.remove_current, QKeySequence.StandardKey.Delete,
                                    "Take the selected document out of the list (asks first while it converts)")
        # Delete removes a document only where the document list has the focus
        self.remove_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.queue.addAction(self.remove_action)
        self.quit_action = action("&Quit", self.close, QKeySequence.StandardKey.Quit)

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        for a in (None, self.export_md_action, self.export_html_action, self.export_docx_action,
                  self.export_json_action, self.export_batch_action, self.copy_action, None, self.quit_action):
            file_menu.addAction(a) if a else file_menu.addSeparator()
        convert_menu = self.menuBar().addMenu("&Convert")
        convert_menu.setToolTipsVisible(True)  # a disabled action's tooltip says why
        for a in (self.convert_action, self.fresh_action, self.page_again_action, self.region_again_action,
                  self.page_edits.region_again.undo_action, self.cancel_action, self.settings_action, None,
                  self.remove_action):
            convert_menu.addAction(a) if a else convert_menu.addSeparator()
        view_menu = self.menuBar().addMenu("&View")
        for a in (self.zoom_in_action, self.zoom_out_action, self.zoom_fit_action, self.fit_width_action,
                  None, self.prev_action, self.next_action, self.goto_action, None, self.prev_departure_action,
                  self.next_departure_action, None, self.overlay_action,
                  self.labels_action):
            view_menu.addAction(a) if a else view_menu.addSeparator()
        help_menu = self.menuBar().addMenu("&Help")
        for a in (self.shortcuts_action, self.demo_action, self.about_action):
            help_menu.addAction(a)

        toolbar = QToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.setMovable(False)
        for a in (self.open_action, self.convert_action, self.cancel_action, self.settings_action, None,
                  self.export_md_action, self.export_json_action, self.copy_action, None, self.zoom_out_action,
                  self.zoom_fit_action, self.fit_width_action, self.zoom_in_action, None, self.overlay_action):
            toolbar.addAction(a) if a else toolbar.addSeparator()
        self.addToolBar(toolbar)

    def _connect_conversion(self) -> None:
        c = self.conversion
        c.page_changed.connect(self._page_changed)
        c.text_appended.connect(self._text_appended)
        c.page_started.connect(self._page_started)
        c.document_changed.connect(self._document_changed)
        c.progress_changed.connect(self._show_progress)
        c.message.connect(self.set_status)
        c.failed.connect(self.show_error)
        c.running_changed.connect(self._running_changed)

    @property
    def document_finished(self):
        """The controller's signal: a job ended ("done", "cancelled", "failed")."""
        return self.conversion.document_finished

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.app_settings.recent_files()
        for path in files:
            a = self.recent_menu.addAction(path.replace("&", "&&"))  # "&" would mark a shortcut key
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
        paths, _ = QFileDialog.getOpenFileNames(self, "Open documents", self.dialog_folder(), OPEN_FILTER)
        if paths:
            window_state.set_last_folder(self.app_settings.q, str(Path(paths[0]).parent))
            self.add_files(paths)

    def dialog_folder(self) -> str:
        """The folder a file dialog opens in: the last one a document was opened from, else the most
        recent file's, else the home folder."""
        remembered = window_state.last_folder(self.app_settings.q)
        if remembered and Path(remembered).is_dir():
            return remembered
        recent = self.app_settings.recent_files()
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def add_files(self, paths, convert: bool = True) -> list[DocumentState]:
        """Open documents and queue them (without a usable model: open them, drafts shown); files
        that cannot be opened are skipped and named in one dialog, in the order given."""
        from core.api import open_document
        from core.errors import EncryptedDocumentError, HSDError

        no_model = convert and not self.models.usable()
        convert = convert and not no_model
        added, refused = [], []
        for raw in paths:
            path = Path(raw)
            password = None
            while True:
                try:
                    doc = open_document(path, password=password, rotate=self.app_settings.conversion().rotate)
                    break
                except EncryptedDocumentError as exc:
                    password = self.ask_password(path, str(exc))
                    if password is None:
                        doc = None
                        break
                except HSDError as exc:
                    refused.append((path, str(exc)))
                    doc = None
                    break
                except OSError as exc:
                    refused.append((path, exc.strerror or str(exc)))
                    doc = None
                    break
            if doc is None:
                continue
            state = DocumentState(path=path.resolve(), page_count=doc.page_count, doc=doc,
                                  status=DocumentStatus.QUEUED if convert else DocumentStatus.OPEN,
                                  password=password, damaged=doc.damaged)
            self.documents.append(state)
            self.queue.addItem(QListWidgetItem())
            self._update_queue_item(state)
            self.app_settings.add_recent(str(path))
            added.append(state)
        if added:
            self._update_welcome()
            self.queue.setCurrentRow(self.documents.index(added[0]))
            if convert:
                self.conversion.queue_paused = False
                self.conversion.start_next()
            elif no_model:
                self.set_status(self.models.no_model_line())
        self._refused(refused)
        self._update_actions()
        return added

    def _refused(self, refused: list[tuple[Path, str]]) -> None:
        """One dialog for the files that could not be opened (a dialog each would stack them, the
        last on top), one line each, by name."""
        if len(refused) == 1:
            self.show_error(f"Cannot open {refused[0][0].name}", refused[0][1])
        elif refused:
            lines = [f"{path.name}: {reason.removeprefix(f'{path}: ')}" for path, reason in refused]
            self.show_error(f"Cannot open {len(refused)} files", "\n".join(lines))

    def ask_password(self, path: Path, message: str) -> str | None:
        """The password of an encrypted PDF (None: cancelled); after a wrong one the dialog says so."""
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Password")
        dialog.setTextEchoMode(QLineEdit.EchoMode.Password)
        dialog.setLabelText(f"Wrong password for {path.name}. Try again, or Cancel:"
                            if "wrong password" in message else f"{path.name} is encrypted. Password:")
        for label in dialog.findChildren(QLabel):
            label.setTextFormat(Qt.TextFormat.PlainText)
        accepted = dialog.exec()
        text = dialog.textValue()
        dialog.deleteLater()
        return text if accepted else None

    # -- converting -------------------------------------------------------------------------------

    def convert_current(self, fresh: bool = False) -> None:
        """Convert the selected document, once a usable model is there (else lead to choosing one)."""
        doc = self.current
        if doc is None:
            self.open_dialog()
            return
        if doc is self.conversion.running:
            return
        from app.page_editing import confirm_conversion

        if not confirm_conversion(self, doc, self.app_settings.conversion(), fresh):
            self.set_status("Not converted: your edits are kept")
            return
        if self.models.ensure(lambda: self.convert_current(fresh)):
            self.conversion.queue(doc, fresh)

    def conversion_mode(self, doc=None) -> str:
        """The decoding mode ``doc``'s results were (or its next run will be) converted with."""
        doc = doc or self.current
        return (doc.settings if doc and doc.settings else self.app_settings.conversion()).mode

    def _page_changed(self, doc, page: int) -> None:
        if doc is not self.current:
            return
        self.thumbs.mark(page)
        if page == self.current_page:
            self.inspection.refresh(self.conversion_mode(doc), doc is self.conversion.running)
            self._show_title()
            if doc.pages[page].result is not None:
                self.show_text()
        if doc.pages[page].phase == PagePhase.DONE:
            self.stats_panel.set_results(list(doc.results.values()))

    def _text_appended(self, doc, page: int) -> None:
        if doc is self.current:
            self.show_text(live=True)

    def _page_started(self, doc, page: int) -> None:
        # the page shown already (drafted while the model loaded) keeps what the user selected on it
        if doc is self.current and self.follow and page != self.current_page:
            self.show_page(page)

    def _document_changed(self, doc) -> None:
        self._update_queue_item(doc)
        if doc is self.current:
            self.thumbs.mark_all()
            self.show_text()
            self._show_title()
            self.stats_panel.set_results(list(doc.results.values()))
            if self.current_page is not None:
                self.inspection.refresh(self.conversion_mode(doc), doc is self.conversion.running)
        self._update_actions()

    def _running_changed(self) -> None:
        busy = self.conversion.busy
        if busy:
            self.follow = True
            if self.current is self.conversion.running:
                self.stats_panel.set_results([])
        self.progress.setVisible(busy)
        self.progress_label.setVisible(busy)
        self._show_progress()
        self._update_actions()

    def _show_progress(self) -> None:
        tracker, doc = self.conversion.tracker, self.conversion.running
        if doc is None:
            return
        self.progress.setRange(0, max(1, tracker.to_convert))
        self.progress.setValue(tracker.done)
        self.progress.setFormat(tracker.bar_text())
        self.progress_label.setText(tracker.text(*page_story.progress_notes(doc, tracker.page)))

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
        self.inspection.clear()
        self._page_cache.clear()
        self.page_view.reset_zoom()
        self.thumbs.show_document(doc)
        self.stats_panel.set_results(list(doc.results.values()))
        # the last document's message (its error, its end) says nothing of this one
        self.set_status(page_story.document_status_line(doc))
        results = doc.results
        self.show_page(min(results) if results else 1)
        self._update_actions()

    def _thumb_row_changed(self, row: int) -> None:
        if row >= 0 and self.current is not None:
            if self.current is self.conversion.running:
                self.follow = False  # the user looks elsewhere: stop following the conversion
            self.show_page(row + 1)

    def show_page(self, page: int) -> None:
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
            self.inspection.clear()
            self.page_view.show_message(f"Page {page} cannot be shown:\n{exc}")
            return
        p = doc.doc.page(page - 1)
        self.page_view.set_page(image, p.width, p.height)
        self.show_text()
        self.inspection.show(doc, page, self.conversion_mode(doc), doc is self.conversion.running)
        self._show_title()
        self._request_preview(doc, page)

    def _step_departure(self, delta: int) -> None:
        self.bottom_tabs.setCurrentWidget(self.review_panel)
        self.review_panel.step(delta)

    def _show_departure(self, departure) -> None:
        """A place of the review list: its page shown, its region and words selected."""
        if self.current is None:
            return
        if departure.page != self.current_page:
            self.show_page(departure.page)
        self.inspection.show_departure(departure)

    def step_page(self, delta: int) -> None:
        if self.current is not None and self.current_page is not None:
            self.go_to_page(self.current_page + delta)

    def go_to_page_dialog(self) -> None:
        if self.current is not None:
            page = navigation.ask_page(self, self.current_page or 1, self.current.page_count)
            if page is not None:
                self.go_to_page(page)

    def go_to_page(self, page: int) -> None:
        if self.current is not None and 1 <= page <= self.current.page_count:
            if self.current is self.conversion.running:
                self.follow = False
            self.show_page(page)

    def queue_menu(self) -> QMenu:
        """The document list's context menu: convert, convert from scratch, remove."""
        menu = QMenu(self.queue)
        for a in (self.convert_action, self.fresh_action, None, self.remove_action):
            menu.addAction(a) if a else menu.addSeparator()
        return menu

    def _queue_menu(self, pos) -> None:
        row = self.queue.indexAt(pos).row()
        if row < 0:
            return
        self.queue.setCurrentRow(row)  # the menu acts on the document under the pointer
        self.queue_menu().exec(self.queue.viewport().mapToGlobal(pos))

    def confirm_remove(self) -> bool:
        return self._ask_while_converting("Remove while converting?", "Cancel it and remove it from the list?")

    def remove_current(self) -> None:
        doc = self.current
        if doc is None:
            return
        if doc is self.conversion.running:
            self.conversion.pause()
            try:
                confirmed = self.confirm_remove()
            finally:
                self.conversion.resume()
            if not confirmed or doc not in self.documents:
                return
            if doc is self.conversion.running:
                self.conversion.cancel()
                self.conversion.queue_paused = False  # the documents queued after it still convert
        row = self.documents.index(doc)
        self.documents.pop(row)
        try:
            doc.doc.close()
        except Exception:
            pass
        # what the window kept of it goes with it: its rendered pages, its records
        for key in [k for k in self._page_cache if k[0] == str(doc.path)]:
            del self._page_cache[key]
        if doc is not self.conversion.running:
            doc.pages.clear()
            doc.previous = None
        self.current = None
        self.inspection.clear()
        self.queue.takeItem(row)
        if not self.documents:
            self.thumbs.forget()
            self.page_view.show_message("Drop PDFs or images here\nor use File > Open")
            self.markdown_view.set_texts("", "")
            self.stats_panel.set_results([])
            self.setWindowTitle("HSD Studio")
            self._update_welcome()
        else:
            self.queue.setCurrentRow(min(row, len(self.documents) - 1))
            if self.current is None:
                self.show_document(self.documents[self.queue.currentRow()])
        self._update_actions()
        release_freed_memory()

    def _page_image(self, doc: DocumentState, page: int, dpi: int = VIEW_DPI):
        key = (str(doc.path), page)
        cached = self._page_cache.get(key)
        if cached is None or cached[0] < dpi:
            cached = (dpi, pil_to_qimage(doc.doc.page(page - 1).render(dpi)))
            self._page_cache[key] = cached
        self._page_cache.move_to_end(key)
        # a few pages at most, and fewer when zoomed in (a page at 400 dpi is some 45 MB)
        while len(self._page_cache) > 1 and (len(self._page_cache) > PAGE_CACHE_PAGES or sum(
                image.sizeInBytes() for _, image in self._page_cache.values()) > PAGE_CACHE_BYTES):
            self._page_cache.popitem(last=False)
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

    def _request_preview(self, doc: DocumentState, page: int) -> None:
        """Draft a page nothing has drafted yet (no model needed), to show its regions at once. The
        page reads "drafting" meanwhile (an OCR drafter takes seconds), its thumbnail counting them."""
        record = doc.pages[page]
        if record.regions or record.result is not None or record.phase != PagePhase.UNTOUCHED or record.preview:
            return
        record.preview = True  # requested once
        drafter = self.app_settings.conversion().drafter
        if drafter.split(":", 1)[0] == "auto":
            try:
                drafter = "textlayer" if doc.doc.page(page - 1).is_born_digital else "rapidocr"
            except Exception:
                pass  # the preview drafter says what it can
        record.drafter, record.drafting_since = drafter, time.monotonic()
        self.previewer.request(doc.path, doc.password, page, self.app_settings.conversion().drafter,
                               doc.doc.rotate)
        self._previewing.add((str(doc.path), page))
        self._preview_clock.start()
        self._show_preview_progress()

    def _show_preview_progress(self) -> None:
        """Once a second while a preview drafter reads: its pages' labels count on; the shown
        page's status line says it (where it is slow enough to matter: OCR)."""
        open_docs = {str(d.path): d for d in self.documents}
        for path, page in list(self._previewing):
            doc = open_docs.get(path)
            if doc is None or doc.pages[page].drafting_since is None:
                self._previewing.discard((path, page))
            elif doc is self.current:
                self.thumbs.mark(page)
        if not self._previewing:
            self._preview_clock.stop()
        doc, page = self.current, self.current_page
        if doc is not None and (str(doc.path), page) in self._previewing \
                and page_story.page_state(doc, page) == PageState.DRAFTING:
            self._show_title()
            line = page_story.preview_line(doc, page)
            if "(OCR)" in line:
                self.set_status(line)

    def _preview_drafted(self, path: str, page: int, regions) -> None:
        doc = next((d for d in self.documents if str(d.path) == path), None)
        if doc is None:
            return
        record = doc.pages[page]
        previewing = (path, page) in self._previewing
        self._previewing.discard((path, page))
        if record.drafting_since is not None and record.phase == PagePhase.UNTOUCHED:
            record.drafting_since = None
        if record.result is None and record.phase == PagePhase.UNTOUCHED and not record.regions \
                and not isinstance(regions, str):
            record.regions, record.region_stats = list(regions), None
        if doc is self.current:
            self.thumbs.mark(page)
            if self.current_page == page:
                self.inspection.refresh(self.conversion_mode(doc), doc is self.conversion.running)
                self._show_title()
                if previewing and self.status_label.text().startswith(f"Page {page}: drafting"):
                    self.set_status(page_story.page_line(doc, page))

    def show_text(self, live: bool = False) -> None:
        """The Markdown pane: the shown page's and the document's text (``live``: streaming)."""
        doc, page = self.current, self.current_page
        if doc is None:
            self.markdown_view.set_texts("", "")
            self._update_copy()
            return
        self.markdown_view.set_base_dir(doc.markdown_path.parent if doc.markdown_path else
                                        document_cache_dir(self.app_settings.cache_dir(), doc.path))
        self.page_edits.refresh()  # reads the document's edits before its text is shown
        self.markdown_view.set_texts(page=doc.page_markdown(page) if page else "",
                                     document=doc.document_markdown(), live=live)
        self._update_copy()

    def _show_title(self) -> None:
        """The Markdown pane's title says what the shown page's Markdown is (partial, drafting...)."""
        doc, page = self.current, self.current_page
        note = ""
        if doc is not None and page is not None:
            state = page_story.page_state(doc, page)
            if state == PageState.PARTIAL:
                note = " — partial: cancelled on this page"
            elif state not in (PageState.OPEN, PageState.QUEUED, PageState.DONE):
                note = f" — page {page}: {page_story.state_label(doc, page)}"
        self.markdown_title.setText(f"Markdown{note}")

    # -- settings, model, status, errors ----------------------------------------------------------

    def edit_settings(self) -> None:
        dialog = SettingsDialog(self.app_settings.conversion(), self)
        if dialog.exec():
            self.app_settings.set_conversion(dialog.settings())
            self.app_settings.set_used_anyway(dialog.used_anyway)
            self._model_changed()
            self.set_status("Settings saved; they apply to the next conversion")

    def _model_changed(self, _model: str = "") -> None:
        self._show_settings_summary()
        self._update_welcome()
        self._update_actions()

    def _update_welcome(self) -> None:
        welcome = not self.documents and not self.models.usable()
        self.page_stack.setCurrentWidget(self.welcome if welcome else self.page_view)
        self.legend.setVisible(not welcome)
        self.frame_legend.setVisible(not welcome)

    def build_demo_model(self) -> None:
        self.set_status("Building the tiny demo model (a few seconds)…")
        self.welcome.chooser.build_demo()

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

    def set_status(self, text: str, details: str = "") -> None:
        """One line in the status bar; the whole text and ``details`` on click."""
        self.status_label.set_message(text, details)

    def show_error(self, title: str, message: str) -> None:
        """A non-blocking dialog (the window stays live) and one line in the status bar."""
        message = app_message(message)
        self.last_error = message
        self.set_status(f"{title}: {message}".replace("\n", "; "))
        box = plain_message_box(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.error_box = box
        self.error_shown.emit(message)

    def _update_queue_item(self, doc: DocumentState) -> None:
        if doc not in self.documents:
            return
        item = self.queue.item(self.documents.index(doc))
        if item is not None:
            item.setText(f"{doc.name}\n{page_story.document_line(doc)}")
            item.setToolTip(plain_tooltip(page_story.document_tooltip(doc)))

    def _update_actions(self) -> None:
        running = self.conversion.running
        has_results = bool(self.current and self.current.results)
        self.cancel_action.setEnabled(self.conversion.busy)
        self.convert_action.setEnabled(self.current is not None and self.current is not running)
        self.convert_action.setStatusTip("Convert the selected document (finished pages are reused)"
                                         if self.models.usable() else "Choose a model, then convert")
        self.fresh_action.setEnabled(self.convert_action.isEnabled())
        page_done = bool(self.current and self.current_page and self.current_page in self.current.results)
        self.page_again_action.setEnabled(self.convert_action.isEnabled() and page_done)
        self.page_edits.region_again.update_action()
        self.remove_action.setEnabled(self.current is not None)
        for a in (self.export_md_action, self.export_json_action, self.export_html_action, self.export_docx_action):
            a.setEnabled(has_results)
        self.export_batch_action.setEnabled(any(d.results and d is not running for d in self.conversion.documents))
        self._update_copy()

    def _update_copy(self) -> None:
        """Copy Markdown copies what the Markdown pane shows: nothing shown, nothing to copy."""
        self.copy_action.setEnabled(self.current is not None and bool(self.markdown_view.current_text()))

    # -- cancelling and quitting ----------------------------------------------------------------------

    def _ask_while_converting(self, title: str, question: str) -> bool:
        """One question about the running conversion (the same words for cancelling and quitting);
        the caller pauses the conversion while it is asked."""
        doc = self.conversion.running
        done = len(doc.results) if doc else 0
        return ask_yes_no(
            self, title,
            f"{doc.name if doc else 'A document'} is converting ({page_story.plural(done, 'page')} finished); "
            f"the conversion is paused. {question} Finished pages are kept and converting again resumes.")

    def confirm_cancel(self) -> bool:
        return self._ask_while_converting("Cancel the conversion?", "Cancel it?")

    def cancel_conversion(self) -> bool:
        """Cancel the running conversion once the user says so (Esc is easily pressed by mistake);
        True if it was cancelled."""
        if not self.conversion.busy:
            return False
        self.conversion.pause()
        try:
            confirmed = self.confirm_cancel()
        finally:
            self.conversion.resume()
        if confirmed:
            self.conversion.cancel()
        return confirmed

    def confirm_quit(self) -> bool:
        """Ask before quitting mid-conversion (the conversion is paused while asking)."""
        return self._ask_while_converting("Quit while converting?", "Quit anyway?")

    def closeEvent(self, event):  # noqa: N802
        if self.conversion.busy and not self._quit_confirmed:
            self.conversion.pause()
            try:
                confirmed = self.confirm_quit()
            finally:
                self.conversion.resume()
            if not confirmed:
                event.ignore()
                return
            self._quit_confirmed = True
        if self.isVisible():
            window_state.save_layout(self, self.app_settings.q)
        if self.conversion.busy:
            # A cancel takes effect within one forward pass; a model loading or a drafter reading a
            # scan cannot be interrupted, and tearing down a loaded model can take seconds: the
            # process ends without waiting for either (finished pages are saved as they finish).
            self.conversion.stop(QUIT_WAIT_MS)
            self.quit_mid_conversion = True
        self.previewer.close()  # its thread never emits into a closed (soon deleted) window
        for doc in self.documents:
            try:
                doc.doc.close()
            except Exception:
                pass
        super().closeEvent(event)


def _titled(title, widget: QWidget) -> QWidget:
    """``widget`` under a bold title (a string, or a label to use as the title)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(2, 2, 2, 2)
    label = title if isinstance(title, QLabel) else QLabel(f"<b>{title}</b>")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    box.title = label
    return box
