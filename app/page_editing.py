"""Edits that stay: the user's corrections of converted pages, kept in the document's work folder
(``core.edits``, beside the resume store), shown in place of the model's page, written by every
export, and guarded against a conversion that would replace them.

A re-conversion keeps an edit where the page comes back as it was (a page the resume store keeps);
where pages are converted anew (from scratch, or under other settings), the user is asked first,
and the edits of those pages go only once they said yes.

"Convert this page again" drops the shown page from the work folder and converts the document (only
that page is decoded); "Convert this region again" reads one region's crop again off the UI thread
(``core.api.read_region_again``) and puts its reading in the region's place in the page's Markdown
as the user's edit of the page (``core.api.place_reading``), so it is marked, kept, exported and
undone ("Model's text") as any edit is.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from app.widgets import ask_yes_no
from app.worker import release_thread, start_worker
from core.api import PageEdits


def work_markdown(window, doc) -> Path:
    """The Markdown a conversion of ``doc`` writes in its work folder (its resume store beside it)."""
    if doc.markdown_path:
        return Path(doc.markdown_path)
    from app.worker import document_cache_dir

    return document_cache_dir(window.app_settings.cache_dir(), doc.path) / f"{doc.path.stem or 'document'}.md"


def edits_of(window, doc) -> PageEdits:
    """``doc``'s edits, read from its work folder once and kept on the document (``doc.edits``)."""
    from core.api import work_dir_for

    folder = work_dir_for(work_markdown(window, doc))
    edits = getattr(doc, "edits", None)
    if edits is None or edits.path.parent != folder:
        edits = PageEdits(folder)
        doc.edits = edits
    return edits


def model_text(doc, page: int) -> str | None:
    """The model's Markdown of ``page`` as exported (None: the page is not finished)."""
    from core.api import page_markdown

    record = doc.pages.get(page)
    if record is None or record.result is None:
        return None
    return page_markdown(record.result, record.result.figure_links)


def edited_pages(window, doc) -> list[int]:
    """The pages whose shown and exported text is the user's."""
    edits = edits_of(window, doc)
    return [p for p in edits.pages() if (m := model_text(doc, p)) is not None and edits.text_of(p, m) != m]


def save_edit(window, doc, page: int, text: str) -> bool:
    """Keep ``text`` as ``page``'s Markdown (the model's own text drops the edit); False where the
    page has no result to edit."""
    model = model_text(doc, page)
    if model is None:
        return False
    edits_of(window, doc).set(page, text, model)
    return True


def revert_edit(window, doc, page: int) -> None:
    edits_of(window, doc).discard([page])


def exported_texts(window, doc) -> dict[int, str]:
    """Page -> the edited text, for the pages an export writes as the user edited them."""
    edits = edits_of(window, doc)
    return {p: edits.text_of(p, model_text(doc, p)) for p in edited_pages(window, doc)}


def pages_at_risk(window, doc, settings, fresh: bool) -> list[int]:
    """Edited pages a conversion of ``doc`` under ``settings`` converts anew: all of them from
    scratch or where the work folder holds pages of other settings; none where its pages are kept."""
    from core.api import saved_settings, work_dir_for

    pages = edits_of(window, doc).pages()
    if not pages or fresh:
        return pages
    kept_settings = saved_settings(work_dir_for(work_markdown(window, doc)))
    return [] if kept_settings == settings.output_settings() else pages


def confirm_conversion(window, doc, settings, fresh: bool) -> bool:
    """Ask before a conversion replaces edited pages; yes drops those edits, no stops it."""
    pages = pages_at_risk(window, doc, settings, fresh)
    if not pages:
        return True
    listed = ", ".join(str(p) for p in pages[:12]) + (" …" if len(pages) > 12 else "")
    plural = "s" if len(pages) > 1 else ""
    if not ask_yes_no(window, "Replace your edits?",
                      f"You edited page{plural} {listed} of {doc.name}. Converting "
                      f"{'from scratch' if fresh else 'with these settings'} writes the page{plural} anew "
                      f"and your edit{plural} will be gone.\n\nConvert anyway?"):
        return False
    edits_of(window, doc).discard(pages)
    return True


class PageEditActions:
    """The window's side of editing: the Markdown pane's edit button, saving and reverting, the mark."""

    def __init__(self, window):
        self.window = window
        self._editing: tuple | None = None  # (document, page) being edited
        view = window.markdown_view
        view.edit_button.toggled.connect(self._toggled)
        view.page_edit_saved.connect(self.saved)
        view.page_edit_reverted.connect(self.reverted)
        self.region_again = RegionAgainActions(window, self)  # "Convert this region again"

    def _toggled(self, on: bool) -> None:
        if on:  # before the view emits its text: the page is the one shown when editing began
            self._editing = (self.window.current, self.window.current_page)

    def saved(self, text: str) -> None:
        doc, page = self._editing or (None, None)
        self._editing = None
        if doc is None or page is None:
            return
        saved = save_edit(self.window, doc, page, text)
        self.refresh_views(doc)  # first: the selected region's line would replace what is said here
        if saved:
            edited = page in edited_pages(self.window, doc)
            self.window.set_status(f"Page {page}: your edit is kept and exported" if edited else
                                   f"Page {page}: the model's text again")

    def reverted(self) -> None:
        doc, page = self.window.current, self.window.current_page
        if doc is None or page is None:
            return
        revert_edit(self.window, doc, page)
        self.refresh_views(doc)
        self.window.set_status(f"Page {page}: the model's text again")

    def refresh_views(self, doc) -> None:
        if doc is self.window.current:
            self.window.show_text()
            # the review list and the regions' links are the page text's: an edit changes both
            self.window.inspection.refresh(self.window.conversion_mode(doc), doc is self.window.conversion.running)

    def refresh(self) -> None:
        """The edit button and mark for the page shown (called whenever the pane's text is set), and
        whether its region actions apply."""
        self.region_again.update_action()
        doc, page = self.window.current, self.window.current_page
        view = self.window.markdown_view
        if doc is None or page is None or doc is self.window.conversion.running:
            view.set_editable(False)
            return
        edits_of(self.window, doc)
        finished = model_text(doc, page) is not None
        view.set_editable(finished, edited=finished and page in edited_pages(self.window, doc))

    def convert_page_again(self) -> None:
        """Convert the shown page again and keep the others: its saved page is dropped from the work
        folder, and the document's run takes every other page back as it was (asks first where the
        page carries an edit)."""
        from core.api import forget_page, work_dir_for

        window = self.window
        doc, page = window.current, window.current_page
        if doc is None or page is None or doc is window.conversion.running or model_text(doc, page) is None:
            return
        edits = edits_of(window, doc)
        if edits.get(page) is not None:
            if not ask_yes_no(window, "Replace your edit?",
                              f"You edited page {page} of {doc.name}. Converting it again writes it anew and "
                              "your edit will be gone.\n\nConvert it again?"):
                window.set_status(f"Page {page} not converted: your edit is kept")
                return
            edits.discard([page])
        forget_page(work_dir_for(work_markdown(window, doc)), page)
        window.convert_current()


# -- convert this region again ----------------------------------------------------------------------


@dataclass
class RegionAgainJob:
    """One region of a converted page to read again: ``path``'s page ``result.page``, region ``region``."""

    path: Path
    result: object
    region: int
    config: object              # the engine configuration to read it with (the current settings')
    password: str | None = None


class RegionAgainWorker(QObject):
    """Reads one region again (``core.api.read_region_again``) in a QThread, with the engine the
    conversions use (one model load for both; a conversion started meanwhile waits for it).
    ``finished``: the ``RegionReading``, or None and one line saying why not."""

    finished = Signal(object, str)

    def __init__(self, job: RegionAgainJob, engines):
        super().__init__()
        self.job = job
        self.engines = engines
        self.cancelled = threading.Event()

    @Slot()
    def run(self) -> None:
        from core.api import read_region_again
        from core.errors import HSDError

        reading, message = None, ""
        try:
            with self.engines.lock:
                engine = self.engines.get(self.job.config)
                reading = read_region_again(engine, self.job.path, self.job.result, self.job.region,
                                            self.job.password, self.cancelled.is_set)
        except HSDError as exc:
            message = str(exc)
        except MemoryError:
            message = "out of memory; try a lower DPI or the CPU device"
        except OSError as exc:
            message = f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"
        except Exception as exc:  # a bug must not take the app down: report it
            traceback.print_exc()
            message = f"unexpected error: {type(exc).__name__}: {exc}"
        self.finished.emit(reading, message)


#: (thread, worker) of the region readings under way, kept until they end whatever becomes of the
#: window (a QThread, or its worker, destroyed while it runs aborts the process).
_region_threads: list = []


class RegionAgainActions(QObject):
    """"Convert this region again": the selected region (or the one right-clicked on the page) is
    read again off the UI thread, and its reading put in its place in the page's Markdown as the
    user's edit of the page (marked, kept, exported, reviewed; "Model's text" drops it, and "Undo
    converting the region again" brings back the text the page had, an earlier edit included).
    Disabled, with its reason as tooltip, while a conversion or another region is running."""

    done = Signal(str)      # the line said when a region's reading ended (placed or not)

    def __init__(self, window, page_edits: "PageEditActions"):
        super().__init__(window)
        self.window = window
        self.page_edits = page_edits
        self.worker: RegionAgainWorker | None = None
        self.thread = None
        self._running: tuple | None = None    # (document, page, region, result) being read
        self.action = QAction("Convert this &region again", window)
        self.action.triggered.connect(lambda _checked=False: self.convert_region_again())
        self.undo_action = QAction("&Undo converting the region again", window)
        self.undo_action.triggered.connect(lambda _checked=False: self.undo())
        self._last: tuple | None = None       # (document, page, region, text before, text after) placed last
        self.menu: QMenu | None = None
        view = window.page_view
        view.region_menu_requested.connect(self._region_menu)
        # after the inspection took the click in: the action reads what is selected
        view.region_clicked.connect(lambda _i: QTimer.singleShot(0, self.update_action))
        view.background_clicked.connect(lambda: QTimer.singleShot(0, self.update_action))
        app = QCoreApplication.instance()
        if app is not None:  # a reading under way stops within one pass when the app quits
            app.aboutToQuit.connect(self.stop)

    @property
    def busy(self) -> bool:
        return self.worker is not None

    def stop(self, wait_ms: int = 5000) -> bool:
        """Cancel a reading under way (it stops at its next pass) and wait up to ``wait_ms`` for
        it; True where none runs any more."""
        if self.worker is None:
            return True
        self.worker.cancelled.set()
        return self.thread is None or self.thread.wait(wait_ms)

    def _selected(self) -> int | None:
        inspection = getattr(self.window, "inspection", None)
        return inspection.selected if inspection is not None else None

    def why_not(self, index: int | None = None) -> str:
        """Why region ``index`` (the selected one where None) cannot be converted again now ("": it can)."""
        window = self.window
        doc, page = window.current, window.current_page
        index = self._selected() if index is None else index
        if window.conversion.busy:
            running = window.conversion.running
            name = running.name if running is not None else "a document"
            return f"Not while {name} converts: the model is busy (available once the conversion ends)"
        if self.busy:
            return "A region is being converted again; wait until it is done"
        if doc is None or page is None or model_text(doc, page) is None:
            return "Convert the page first"
        if index is None:
            return "Click a region on the page first"
        record = doc.pages.get(page)
        regions = record.result.regions if record is not None and record.result is not None else []
        if not 0 <= index < len(regions):
            return "Click a region on the page first"
        from core.api import FIGURE_LABELS

        if regions[index].label in FIGURE_LABELS:
            return f"Region {index + 1} is a {regions[index].label}: it has no text to read again"
        return ""

    def update_action(self) -> None:
        reason = self.why_not()
        self.action.setEnabled(not reason)
        tip = reason or "Read the selected region again with the model and put its text in place (kept as your edit)"
        self.action.setToolTip(tip)
        self.action.setStatusTip(tip)
        undoable = self._undoable()
        self.undo_action.setEnabled(undoable)
        tip = (f"Page {self._last[1]}: bring back the text region {self._last[2] + 1} replaced" if undoable else
               "Nothing to undo: no region converted again is shown as it was placed")
        self.undo_action.setToolTip(tip)
        self.undo_action.setStatusTip(tip)

    def _undoable(self) -> bool:
        """The shown page still reads as the last region conversion left it."""
        if self._last is None:
            return False
        doc, page, _index, _before, after = self._last
        window = self.window
        return (doc is window.current and page == window.current_page and not window.markdown_view.editing
                and doc.pages.get(page) is not None and doc.page_markdown(page) == after)

    def undo(self) -> bool:
        """Bring back the page's text from before the last region conversion (the model's, or the
        user's earlier edit); False where the page has changed since."""
        if not self._undoable():
            self.update_action()
            return False
        doc, page, index, before, _after = self._last
        self._last = None
        save_edit(self.window, doc, page, before)  # the model's own text drops the edit
        self.page_edits.refresh_views(doc)
        self.update_action()
        self.window.set_status(f"Page {page}: the text region {index + 1} replaced is back")
        return True

    def _region_menu(self, index: int, where) -> None:
        """A right click on region ``index``: it is selected, and its menu offers to convert it again."""
        inspection = getattr(self.window, "inspection", None)
        if inspection is not None and inspection.selected != index:
            inspection.select(index)
        self.update_action()
        menu = QMenu(self.window)
        menu.setToolTipsVisible(True)
        menu.addAction(self.action)
        menu.addAction(self.undo_action)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.menu = menu
        menu.popup(where)

    def convert_region_again(self, index: int | None = None) -> bool:
        """Read region ``index`` (the selected one where None) of the shown page again, off the UI
        thread; False (and the reason on the status line) where it cannot be now."""
        window = self.window
        index = self._selected() if index is None else index
        reason = self.why_not(index)
        if reason:
            window.set_status(reason)
            self.update_action()
            return False
        doc, page = window.current, window.current_page
        result = doc.pages[page].result
        try:
            config = window.app_settings.conversion().engine_config()
        except Exception as exc:  # HSDError, or EngineConfig's ValueError: settings this version refuses
            window.set_status(f"Page {page}, region {index + 1} was not converted again: {exc}")
            return False
        job = RegionAgainJob(doc.path, result, index, config, doc.password)
        worker = RegionAgainWorker(job, window.conversion.engines)
        worker.finished.connect(self._finished)
        self.worker, self._running = worker, (doc, page, index, result)
        self.thread = start_worker(worker)
        _region_threads.append((self.thread, worker))
        self.update_action()
        window.set_status(f"Page {page}, region {index + 1}: converting it again…")
        return True

    def _finished(self, reading, message: str) -> None:
        from core.api import place_reading

        thread, worker, (doc, page, index, result) = self.thread, self.worker, self._running
        self.worker = self.thread = self._running = None
        if (thread, worker) in _region_threads:
            _region_threads.remove((thread, worker))
        release_thread(thread)
        window = self.window
        where = f"Page {page}, region {index + 1}"
        if reading is None:
            line = f"{where} was not converted again: {message}"
        elif doc not in window.documents or doc.pages.get(page) is None or doc.pages[page].result is not result:
            line = f"{where}: the page changed while the region was read; nothing was changed"
        else:
            if window.current is doc and window.current_page == page:
                window.markdown_view.finish_editing()  # an edit in progress is saved first, then placed into
            before = doc.page_markdown(page)
            placement = place_reading(result, before, reading)
            if placement.placed:
                save_edit(window, doc, page, placement.text)
                self._last = (doc, page, index, before, doc.page_markdown(page))
                self.page_edits.refresh_views(doc)
            line = placement.note
        self.update_action()
        window.set_status(line)
        self.done.emit(line)
