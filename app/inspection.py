"""Region <-> Markdown: clicking a region inspects it and shows its Markdown; selecting or
scrolling the Markdown highlights its region; the inspector follows page changes and finishes."""

from __future__ import annotations

from app.page_view import unverified_reason


class RegionInspection:
    """Mixed into ``MainWindow`` (uses its page view, Markdown view, inspector and ``_spans``)."""

    def current_result(self):
        if self.current is None or self.current_page is None:
            return None
        return self.current.results.get(self.current_page)

    def select_region(self, index: int) -> None:
        """A region was clicked: inspect it and show the Markdown it produced."""
        result = self.current_result()
        self.page_view.highlight_region(index)
        if result is None:
            self._inspect_unfinished(index)
            return
        self.inspector.show_region(result, index, self._mode())
        self.bottom_tabs.setCurrentWidget(self.inspector)
        ranges = [(s, e) for r, s, e in self._spans if r == index]
        if ranges:
            self.markdown_view.show_range(ranges[0][0], ranges[-1][1])
            self.set_status(f"Region {index + 1}: {len(ranges)} stretch(es) of Markdown came from its draft")
        else:
            self.set_status(f"Region {index + 1}: no Markdown was accepted from its draft")

    def _mode(self) -> str:
        doc = self.current
        return (doc.settings if doc and doc.settings else self.app_settings.conversion()).mode

    def _inspect_unfinished(self, index: int) -> None:
        """A region of a page not finished: its draft, plain, and why nothing is verified yet."""
        doc, page = self.current, self.current_page
        regions, stats = self._page_regions(doc, page) if doc and page else ([], None)
        if not 0 <= index < len(regions):
            self.inspector.clear("This page is not converted yet.")
            return
        region_stats = stats[index] if stats and index < len(stats) else None
        partial = page in doc.partial_pages
        if region_stats is not None and region_stats.verified:
            reason = f"verified on the region ({region_stats.accepted_tokens} of {region_stats.drafted_tokens} " \
                     "draft tokens accepted), the page was not finished"
        elif doc is self.running:
            reason = "the page is still converting"
        elif partial:
            reason = "the conversion was cancelled before this region was verified"
        elif region_stats is not None:
            reason = unverified_reason(regions[index], region_stats, self._mode())
        else:
            reason = "the page is not converted yet (these are the drafter's regions)"
        self.inspector.show_unverified(page, regions[index], index, reason, partial=partial)
        self.bottom_tabs.setCurrentWidget(self.inspector)

    def _refresh_inspector(self) -> None:
        """Show the inspected region again from the page's newest data (never a stale view)."""
        index = self.inspector.region_index
        if index is None or self.inspector.page != self.current_page:
            return
        self.select_region(index)

    def _markdown_scrolled(self, _value: int) -> None:
        """Follow the Markdown: highlight (and bring into view) the region whose text is at the top."""
        source = self.markdown_view.source
        if not self._spans or not source.isVisible() or self.markdown_view.scope != "page":
            return
        offset = source.cursorForPosition(source.viewport().rect().topLeft()).position()
        region = self.region_at_offset(offset)
        if region is None:
            region = next((r for r, start, _ in self._spans if start >= offset and r is not None), None)
        if region is not None and region != self.page_view.highlighted:
            self.page_view.highlight_region(region, center=True)

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
                self.inspector.show_region(result, region, self._mode())
