"""The main window: document queue, thumbnails, page view with overlay, Markdown, inspector, stats.

Files come in by drag and drop anywhere on the window, File > Open or the recent-files menu. Each
becomes a queued document; documents convert one at a time in a background worker
(``app.worker``), the rest of the window stays live. All engine results arrive as signals into the
GUI thread and update the page overlay, the Markdown pane and the statistics as they happen.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QIcon, QKeySequence, QPainter, QPixmap
from PySide6.QtWidgets import (QFileDialog, QInputDialog, QLabel, QLineEdit, QListView, QListWidget,
                               QListWidgetItem, QMainWindow, QMessageBox, QProgressBar, QSplitter,
                               QTabWidget, QToolBar, QVBoxLayout, QWidget)

from app.draft_inspector import DraftInspector
from app.markdown_view import MarkdownView, map_spans
from app.page_view import Legend, PageView, pil_to_qimage
from app.settings import AppSettings, ConversionSettings, SettingsDialog
from app.stats_panel import StatsPanel
from app.worker import ConversionJob, ConversionWorker, EngineCache, session_dir_for, start_worker

OPEN_FILTER = "Documents (*.pdf *.png *.jpg *.jpeg *.tif *.tiff *.bmp *.webp *.gif);;All files (*)"
VIEW_DPI = 110
MAX_VIEW_DPI = 400
THUMB_DPI = 16
STATUS_TEXT = {"queued": "waiting", "converting": "converting…", "done": "done", "cancelled": "cancelled",
               "failed": "failed", "open": "not converted"}


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
    markdown_path: Path | None = None        # the session file written by write_markdown
    exported_markdown: Path | None = None    # where the user last exported the Markdown
    fresh: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    def page_markdown(self, page: int) -> str:
        from core.api import page_markdown

        result = self.results.get(page)
        if result is not None:
            return page_markdown(result, result.figure_links)
        return self.live_text.get(page, "")

    def document_markdown(self) -> str:
        """What ``hsd convert`` writes: the session file once written, else the same assembly."""
        from core.api import assemble, page_markdown

        if self.status == "done" and self.markdown_path and self.markdown_path.exists():
            return self.markdown_path.read_text("utf-8")
        pages = [page_markdown(r, r.figure_links) for _, r in sorted(self.results.items())]
        live = [t for p, t in sorted(self.live_text.items()) if p not in self.results]
        return assemble(pages + live) if pages or live else ""


class MainWindow(QMainWindow):
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
        self.setWindowTitle("HSD Studio")
        self.setAcceptDrops(True)
        self.resize(1400, 860)
        self._build_widgets()
        self._build_actions()
        self._thumb_timer = QTimer(self)
        self._thumb_timer.setInterval(0)
        self._thumb_timer.timeout.connect(self._render_some_thumbnails)
        self._update_actions()

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
        self.thumbs.setStyleSheet("QListWidget::item:selected { background: #cfe3ff; color: black; }")
        self.thumbs.setAcceptDrops(False)
        self.thumbs.currentRowChanged.connect(self._thumb_row_changed)
        left = QSplitter(Qt.Orientation.Vertical)
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
        self.legend = Legend()
        page_box = QWidget()
        page_layout = QVBoxLayout(page_box)
        page_layout.setContentsMargins(0, 0, 0, 0)
        page_layout.addWidget(self.page_view, 1)
        page_layout.addWidget(self.legend)

        self.markdown_view = MarkdownView()
        self.markdown_view.page_selection.connect(self._markdown_selection)
        self.inspector = DraftInspector()
        self.stats_panel = StatsPanel()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.inspector, "Draft inspector")
        self.bottom_tabs.addTab(self.stats_panel, "Statistics")
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(_titled("Markdown", self.markdown_view))
        right.addWidget(self.bottom_tabs)
        right.setSizes([480, 320])

        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(left)
        main.addWidget(page_box)
        main.addWidget(right)
        main.setSizes([200, 600, 600])
        main.setStretchFactor(1, 1)
        main.setStretchFactor(2, 1)
        self.setCentralWidget(main)

        self.status_label = QLabel("Drop PDFs or images anywhere to convert them.")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(240)
        self.progress.setFormat("%v / %m pages")
        self.progress.setVisible(False)
        self.settings_label = QLabel()
        self.settings_label.setStyleSheet("color: #666")
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress)
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
        self.next_action = action("Next page", lambda: self.step_page(1), "PgDown")
        self.prev_action = action("Previous page", lambda: self.step_page(-1), "PgUp")
        self.remove_action = action("Remove from queue", self.remove_current, None,
                                    "Take the selected document out of the list (not while it converts)")
        quit_action = action("&Quit", self.close, QKeySequence.StandardKey.Quit)

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
        for a in (self.zoom_in_action, self.zoom_out_action, self.zoom_fit_action, self.prev_action,
                  self.next_action):
            view_menu.addAction(a)
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
        for a in (self.zoom_out_action, self.zoom_fit_action, self.zoom_in_action):
            toolbar.addAction(a)
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
            self.add_files(paths)

    def _last_dir(self) -> str:
        recent = self.app_settings.recent_files()
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def add_files(self, paths, convert: bool = True) -> list[DocumentState]:
        """Open and queue documents; a file that cannot be opened shows an error and is skipped."""
        from core.api import open_document
        from core.errors import EncryptedDocumentError, HSDError

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

    # -- conversion -------------------------------------------------------------------------------

    def convert_current(self, fresh: bool = False) -> None:
        doc = self.current
        if doc is None:
            self.open_dialog()
            return
        if doc is self.running:
            return
        doc.status = "queued"
        doc.fresh = fresh
        self._update_queue_item(doc)
        self.queue_paused = False
        self._start_next()

    def _start_next(self) -> None:
        if self.worker is not None or self.queue_paused:
            return
        doc = next((d for d in self.documents if d.status == "queued"), None)
        if doc is None:
            self._update_actions()
            return
        settings = self.app_settings.conversion()
        try:
            settings.engine_config()
        except Exception as exc:
            doc.status = "failed"
            doc.error = str(exc)
            self._update_queue_item(doc)
            self.show_error("Settings are not valid", str(exc))
            return
        job = ConversionJob(path=doc.path, settings=settings, password=doc.password, fresh=doc.fresh,
                            session_dir=session_dir_for(self.app_settings.cache_dir(), doc.path))
        doc.status = "converting"
        doc.error = None
        doc.warnings = []
        doc.settings = settings
        doc.results.clear()
        doc.live_text.clear()
        doc.live_regions.clear()
        doc.markdown_path = None
        doc.fresh = False
        self.running = doc
        self.follow = True
        worker = ConversionWorker(job, self.engines)
        worker.started.connect(self._job_started)
        worker.progress.connect(self._job_progress)
        worker.page_started.connect(self._page_started)
        worker.regions_drafted.connect(self._regions_drafted)
        worker.region_verified.connect(self._region_verified)
        worker.text_appended.connect(self._text_appended)
        worker.page_done.connect(self._page_done)
        worker.error.connect(self._job_error)
        worker.warning.connect(self._job_warning)
        worker.finished.connect(self._job_finished)
        self.worker = worker
        self.thread = start_worker(worker)
        self._update_queue_item(doc)
        self.progress.setRange(0, 0)
        self.progress.setVisible(True)
        self.set_status(f"Starting {doc.name}…")
        if self.current is doc:
            self._show_document_text()
            self.stats_panel.set_results([])
        self._update_actions()

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.queue_paused = True
            self.set_status("Cancelling…")

    @property
    def busy(self) -> bool:
        return self.worker is not None

    def _job_started(self, total: int) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(0)

    def _job_progress(self, done: int, total: int, message: str) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        if self.running is not None:
            self.set_status(f"{self.running.name}: {message}")

    def _page_started(self, page: int, index: int, total: int) -> None:
        doc = self.running
        if doc is None:
            return
        doc.live_text.setdefault(page, "")
        if doc is self.current and self.follow:
            self.show_page(page, follow=True)

    def _regions_drafted(self, page: int, regions) -> None:
        doc = self.running
        if doc is None:
            return
        doc.live_regions[page] = [regions, [None] * len(regions)]
        if doc is self.current and self.current_page == page:
            self.page_view.set_regions(regions, None, doc.settings.mode)

    def _region_verified(self, page: int, index: int, stats, text: str) -> None:
        doc = self.running
        if doc is None or page not in doc.live_regions:
            return
        doc.live_regions[page][1][index] = stats
        if doc is self.current and self.current_page == page:
            self.page_view.update_region(index, stats)

    def _text_appended(self, page: int, text: str) -> None:
        doc = self.running
        if doc is None:
            return
        doc.live_text[page] = doc.live_text.get(page, "") + text
        if doc is self.current:
            self._show_document_text(live=True)

    def _page_done(self, result) -> None:
        doc = self.running
        if doc is None:
            return
        doc.results[result.page] = result
        doc.live_text.pop(result.page, None)
        doc.live_regions.pop(result.page, None)
        self._mark_thumbnail(doc, result.page)
        if result.error:
            self.set_status(f"{doc.name}: page {result.page} failed: {result.error}")
        elif result.draft_failure:
            self.set_status(f"{doc.name}: page {result.page}: the drafter failed ({result.draft_failure}); "
                            "decoded without drafts (same text, slower)")
        if doc is self.current:
            if self.current_page == result.page:
                self._show_overlay()
                self._show_document_text()
            else:
                self._show_document_text()
            self.stats_panel.set_results(list(doc.results.values()))

    def _job_error(self, message: str) -> None:
        doc = self.running
        if doc is not None:
            doc.error = message
        self.show_error(f"Converting {doc.name if doc else 'the document'} failed", message)

    def _job_warning(self, message: str) -> None:
        """Core turned something off and went on (a drafter step whose package is missing, say):
        the status bar says so now, and again when the document is done."""
        doc = self.running
        if doc is None:
            return
        if message not in doc.warnings:
            doc.warnings.append(message)
        self.set_status(f"{doc.name}: warning: {message}")

    def _job_finished(self, status: str) -> None:
        doc, worker, thread = self.running, self.worker, self.thread
        self.running = None
        self.worker = None
        if thread is not None:
            thread.quit()
            thread.wait(5000)
            thread.deleteLater()
        self.thread = None
        if doc is not None:
            doc.status = status
            doc.markdown_path = worker.outcome.markdown_path if worker else None
            doc.live_text.clear()
            doc.live_regions.clear()
            self._update_queue_item(doc)
            failed = [r.page for r in doc.results.values() if r.error]
            if status == "done":
                note = f"; pages {', '.join(map(str, failed))} failed" if failed else ""
                undrafted = [r.page for r in doc.results.values() if r.draft_failure]
                if undrafted:
                    note += f"; pages {', '.join(map(str, undrafted))} decoded without drafts (drafter failed)"
                if doc.warnings:
                    note += "; warning: " + "; ".join(doc.warnings)
                self.set_status(f"{doc.name}: converted {len(doc.results)} page(s){note}")
            elif status == "cancelled":
                self.set_status(f"{doc.name}: cancelled; {len(doc.results)} finished page(s) kept "
                                "(converting again resumes)")
            if doc is self.current:
                self._show_document_text()
                self.stats_panel.set_results(list(doc.results.values()))
                if self.current_page is not None:
                    self._show_overlay()
        self.progress.setVisible(False)
        self._update_actions()
        self.document_finished.emit(status)
        if getattr(self, "_close_when_idle", False):
            self.close()
            return
        self._start_next()

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
        self.thumbs.blockSignals(True)
        self.thumbs.clear()
        placeholder = QPixmap(100, 130)
        placeholder.fill(QColor(250, 250, 250))
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
            item = self.thumbs.item(i)
            if item is not None:
                item.setIcon(QIcon(_framed(QPixmap.fromImage(pil_to_qimage(image)))))

    def _mark_thumbnail(self, doc: DocumentState, page: int) -> None:
        if doc is not self.current:
            return
        item = self.thumbs.item(page - 1)
        if item is None:
            return
        result = doc.results.get(page)
        if result is None:
            item.setText(f"{page}")
            item.setToolTip("not converted")
        elif result.error:
            item.setText(f"{page} ✗")
            item.setToolTip(f"failed: {result.error}")
        else:
            s = result.stats
            item.setText(f"{page} ✓")
            item.setToolTip(f"{s.generated_tokens} tokens, {s.forward_passes} passes, "
                            f"mean accepted {s.mean_accepted_length:.2f}")

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
        result = doc.results.get(page)
        if result is not None:
            self.page_view.set_regions(result.regions, result.region_stats, mode)
        elif page in doc.live_regions:
            regions, stats = doc.live_regions[page]
            self.page_view.set_regions(regions, stats, mode)
        else:
            self.page_view.set_regions([], None, mode)

    def _show_document_text(self, live: bool = False) -> None:
        doc, page = self.current, self.current_page
        if doc is None:
            self.markdown_view.set_texts("", "")
            return
        self.markdown_view.set_base_dir(doc.markdown_path.parent if doc.markdown_path else
                                        session_dir_for(self.app_settings.cache_dir(), doc.path))
        page_text = doc.page_markdown(page) if page else ""
        self.markdown_view.set_texts(page=page_text, document=doc.document_markdown(), live=live)
        result = doc.results.get(page) if page else None
        self._spans = map_spans(result, page_text) if result is not None else []

    # -- region <-> Markdown ----------------------------------------------------------------------

    def current_result(self):
        if self.current is None or self.current_page is None:
            return None
        return self.current.results.get(self.current_page)

    def select_region(self, index: int) -> None:
        """A region was clicked: inspect it and show the Markdown it produced."""
        result = self.current_result()
        self.page_view.highlight_region(index)
        if result is None:
            self.inspector.clear("This page is not converted yet.")
            return
        self.inspector.show_region(result, index)
        self.bottom_tabs.setCurrentWidget(self.inspector)
        ranges = [(s, e) for r, s, e in self._spans if r == index]
        if ranges:
            self.markdown_view.show_range(ranges[0][0], ranges[-1][1])
            self.set_status(f"Region {index + 1}: {len(ranges)} stretch(es) of Markdown came from its draft")
        else:
            self.set_status(f"Region {index + 1}: no Markdown was accepted from its draft")

    def region_at_offset(self, offset: int) -> int | None:
        for region, start, end in self._spans:
            if start <= offset < end:
                return region
        return None

    def _markdown_selection(self, start: int, end: int) -> None:
        region = self.region_at_offset(start)
        if region is None and end > start:
            region = self.region_at_offset(end - 1)
        if region is not None:
            self.page_view.highlight_region(region, center=True)
            result = self.current_result()
            if result is not None:
                self.inspector.show_region(result, region)

    # -- export -----------------------------------------------------------------------------------

    def _export_ready(self) -> DocumentState | None:
        doc = self.current
        if doc is None or not doc.results:
            self.show_error("Nothing to export", "Convert a document first.")
            return None
        return doc

    def ask_overwrite(self, paths) -> bool:
        names = "\n".join(str(p) for p in paths[:8]) + ("\n…" if len(paths) > 8 else "")
        answer = QMessageBox.question(self, "Replace files?", f"These files exist already:\n{names}\n\nReplace them?",
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def export_markdown_dialog(self) -> None:
        doc = self._export_ready()
        if doc is None:
            return
        default = str(Path(self._last_dir()) / f"{doc.path.stem}.md")
        path, _ = QFileDialog.getSaveFileName(self, "Export Markdown", default, "Markdown (*.md)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self.export_markdown_to(Path(path))

    def export_markdown_to(self, path: Path) -> Path | None:
        from app.export import export_markdown, markdown_conflicts

        doc = self._export_ready()
        if doc is None:
            return None
        path = Path(path)
        if path.suffix.lower() != ".md":
            path = path.with_name(path.name + ".md")
        results = list(doc.results.values())
        conflicts = markdown_conflicts(path, results)
        if conflicts and not self.ask_overwrite(conflicts):
            self.set_status("Export cancelled: nothing was overwritten")
            return None
        settings = doc.settings or self.app_settings.conversion()
        try:
            written = export_markdown(doc.path, path, results, settings.output_settings(), settings.dpi,
                                      password=doc.password, overwrite=True)
        except Exception as exc:
            self.show_error("Export failed", str(exc))
            return None
        doc.exported_markdown = written
        self.set_status(f"Exported Markdown to {written}")
        return written

    def export_json_dialog(self) -> None:
        doc = self._export_ready()
        if doc is None:
            return
        default = str(Path(self._last_dir()) / f"{doc.path.stem}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Export regions and statistics", default, "JSON (*.json)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self.export_json_to(Path(path))

    def export_json_to(self, path: Path) -> Path | None:
        from app.export import export_json

        doc = self._export_ready()
        if doc is None:
            return None
        path = Path(path)
        if path.exists() and not self.ask_overwrite([path]):
            self.set_status("Export cancelled: nothing was overwritten")
            return None
        settings = doc.settings or self.app_settings.conversion()
        try:
            written = export_json(path, doc.path, doc.exported_markdown, settings.output_settings(),
                                  list(doc.results.values()), overwrite=True)
        except Exception as exc:
            self.show_error("Export failed", str(exc))
            return None
        self.set_status(f"Exported regions and statistics to {written}")
        return written

    def copy_markdown(self) -> None:
        from app.export import copy_to_clipboard

        text = self.markdown_view.current_text()
        copy_to_clipboard(text)
        self.set_status(f"Copied {len(text):,} characters of Markdown")

    # -- settings, status, errors -----------------------------------------------------------------

    def edit_settings(self) -> None:
        dialog = SettingsDialog(self.app_settings.conversion(), self)
        if dialog.exec():
            self.app_settings.set_conversion(dialog.settings())
            self._show_settings_summary()
            self.set_status("Settings saved; they apply to the next conversion")

    def _show_settings_summary(self) -> None:
        self.settings_label.setText(self.app_settings.conversion().summary())

    def set_status(self, text: str) -> None:
        self.status_label.setText(text)

    def show_error(self, title: str, message: str) -> None:
        """A non-blocking dialog (the window stays live) and the status bar."""
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

    def closeEvent(self, event):  # noqa: N802
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


def _framed(pixmap: QPixmap) -> QPixmap:
    """A thumbnail with a thin grey frame (white pages on a white list need an edge)."""
    painter = QPainter(pixmap)
    painter.setPen(QColor(150, 150, 150))
    painter.drawRect(0, 0, pixmap.width() - 1, pixmap.height() - 1)
    painter.end()
    return pixmap


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(2, 2, 2, 2)
    label = QLabel(f"<b>{title}</b>")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box
