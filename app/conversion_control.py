"""The window's conversion queue: documents convert one at a time in a background worker; its
signals update the page overlay, the Markdown, the thumbnails and the progress as they arrive."""

from __future__ import annotations

from app.model_check import app_message
from app.worker import ConversionJob, ConversionWorker, document_cache_dir, start_worker


class ConversionControl:
    """Mixed into ``MainWindow``: starting, following, cancelling and finishing conversions."""

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
            self.show_error("Settings are not valid", f"{exc}. Change it in Settings (Ctrl+,).")
            return
        job = ConversionJob(path=doc.path, settings=settings, password=doc.password, fresh=doc.fresh,
                            work_dir=document_cache_dir(self.app_settings.cache_dir(), doc.path))
        doc.keep_previous()
        doc.status = "converting"
        doc.error = None
        doc.warnings = []
        doc.settings = settings
        doc.results = {}
        doc.live_text.clear()
        doc.live_regions.clear()
        doc.partial_pages.clear()
        doc.converting_page = None
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
        self.progress_label.setVisible(True)
        self.tracker.start(0)
        self._clock.start()
        self._show_progress()
        self._mark_all_thumbnails()
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
        self.tracker.start(total)
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(0)
        self._show_progress()

    def _job_progress(self, done: int, total: int, message: str) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        self.tracker.total = total
        self.tracker.loading = message.startswith("Loading model")
        self._show_progress()
        if self.running is not None:
            self.set_status(f"{self.running.name}: {message}")

    def _show_progress(self) -> None:
        if self.running is None:
            return
        if self.tracker.page is not None:
            self.tracker.page_chars = len(self.running.live_text.get(self.tracker.page, ""))
        self.progress_label.setText(self.tracker.text())
        self.progress.setFormat(self.tracker.bar_text())

    def _page_started(self, page: int, index: int, total: int) -> None:
        doc = self.running
        if doc is None:
            return
        doc.live_text.setdefault(page, "")
        previous, doc.converting_page = doc.converting_page, page
        self.tracker.page_started(page)
        self.tracker.loading = False
        self._mark_thumbnail(doc, page)
        if previous and previous != page:
            self._mark_thumbnail(doc, previous)
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
            if self.inspector.region_index == index and self.inspector.page == page:
                self._refresh_inspector()

    def _text_appended(self, page: int, text: str) -> None:
        doc = self.running
        if doc is None:
            return
        doc.live_text[page] = doc.live_text.get(page, "") + text
        self.tracker.text_appended(text)
        self._show_progress()
        if doc is self.current:
            self._show_document_text(live=True)

    def _page_done(self, result) -> None:
        doc = self.running
        if doc is None:
            return
        doc.results[result.page] = result
        doc.live_text.pop(result.page, None)
        doc.live_regions.pop(result.page, None)
        self.tracker.page_done(result)
        self._show_progress()
        self._mark_thumbnail(doc, result.page)
        if result.error:
            self.set_status(f"{doc.name}: page {result.page} failed: {result.error}")
        elif result.draft_failure:
            self.set_status(f"{doc.name}: page {result.page}: the drafter failed ({result.draft_failure}); "
                            "decoded without drafts (same text, slower)")
        elif result.stats is not None and result.stats.stop_reason == "max_new_tokens":
            self.set_status(f"{doc.name}: warning: page {result.page} stopped at the token limit and may be cut "
                            "short (raise Max tokens per page in Settings)")
        if doc is self.current:
            if self.current_page == result.page:
                self._show_overlay()
                self._refresh_inspector()
            self._show_document_text()
            self.stats_panel.set_results(list(doc.results.values()))

    def _job_error(self, message: str) -> None:
        doc = self.running
        message = app_message(message)
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
        restored = False
        if doc is not None:
            doc.status = status
            doc.markdown_path = worker.outcome.markdown_path if worker else None
            restored = status == "failed" and doc.restore_previous()
            doc.previous = None
            if doc.results and not restored:
                doc.finished_status = status
            if status == "cancelled":  # the page it was on keeps its drafts and what was verified
                for page, text in doc.live_text.items():
                    if page not in doc.results:
                        regions, stats = doc.live_regions.get(page, ([], []))
                        doc.partial_pages[page] = (regions, stats, text)
            doc.converting_page = None
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
                partial = (f"; page {', '.join(map(str, sorted(doc.partial_pages)))} kept as partial (its drafts "
                           "and what was verified)") if doc.partial_pages else ""
                self.set_status(f"{doc.name}: cancelled; {len(doc.results)} finished page(s) kept{partial} "
                                "(converting again resumes)")
            elif restored:
                self.set_status(f"{doc.name}: converting again failed; the previous result is kept "
                                f"({len(doc.results)} page(s), still exportable)")
            if doc is self.current:
                self._show_document_text()
                self.stats_panel.set_results(list(doc.results.values()))
                self._mark_all_thumbnails()
                if self.current_page is not None:
                    self._show_overlay()
                    self._refresh_inspector()
        self._clock.stop()
        self.progress.setVisible(False)
        self.progress_label.setVisible(False)
        self._update_actions()
        self.document_finished.emit(status)
        if getattr(self, "_close_when_idle", False):
            self.close()
            return
        self._start_next()
