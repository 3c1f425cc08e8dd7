"""A run drafts pages ahead of its decode: page records, thumbnails, the status bar and the overlay
tell that honestly, in every order the document run sends its events.

The orders come from ``core.run`` / ``core.draft_ahead``: the first page drafts while the model
loads (``ModelLoading`` ... ``PageDrafting`` ... ``ModelLoaded``); later pages draft while an earlier
one decodes (beside the decode, on a GPU) or between two decodes (drafter first, on a CPU); beside
the decode, a page's decode may start before its drafter has finished.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from core.drafters.base import Region
from core.events import (DocumentPlanned, ModelLoaded, ModelLoading, PageDone, PageDrafting, PageSaved, PageStarted,
                         RegionsDrafted, TextAppended)
from tests.app.conftest import make_pdf
from tests.app.test_first_hour import finish, page_result, run_events


def regions(page: int, n: int = 2):
    return [Region("text", (20, 20 + 60 * i, 300, 70 + 60 * i), f"Draft {i} of page {page}.", "rapidocr")
            for i in range(n)]


def thumb(window, page: int) -> tuple[str, str, str]:
    item = window.thumbs.item(page - 1)
    return item.data(Qt.ItemDataRole.UserRole), item.text(), item.toolTip()


def opened(window, tmp_path, pages: int = 3):
    doc = window.add_files([make_pdf(tmp_path / "scan.pdf", pages=pages)], convert=False)[0]
    run_events(window, doc, [DocumentPlanned(str(doc.path), "o.md", pages, tuple(range(1, pages + 1)))])
    return doc


def test_the_first_page_drafts_while_the_model_loads(qtbot, window, tmp_path):
    doc = opened(window, tmp_path)
    tracker = window.conversion.tracker
    run_events(window, doc, [ModelLoading("tencent/HunyuanOCR"), PageDrafting(1, "rapidocr")])
    assert tracker.loading, "a page drafting does not end the model's load"
    assert "loading the model · page 1: drafting (OCR) · 0 s" in window.progress_label.text()
    assert "loading model" in window.status_label.text()
    state, label, _ = thumb(window, 1)
    assert state == "drafting" and "drafting (OCR)" in label

    run_events(window, doc, [RegionsDrafted(1, regions(1), 2.5)])
    state, label, tip = thumb(window, 1)
    assert state == "drafted" and "converting" not in label and "drafted in 2.5 s" in tip
    assert "loading the model" in window.progress_label.text() and "drafting" not in window.progress_label.text()
    assert len(window.page_view.region_items) == 2, "its regions show at once on the page shown"

    run_events(window, doc, [ModelLoaded("tencent/HunyuanOCR", 9.0)])
    assert not tracker.loading and "model loaded" in window.status_label.text()
    assert tracker.working == 0.0 or tracker.working < 1, "the load's time is not the run's work"
    run_events(window, doc, [PageStarted(1, 0, 3)])
    assert thumb(window, 1)[0] == "converting"
    assert "converting page 1 (1 of 3)" in window.status_label.text()
    assert "page 1: 0 chars" in window.progress_label.text()


def test_a_page_drafted_ahead_is_not_converting_and_the_status_bar_names_the_page_decoding(qtbot, window,
                                                                                           tmp_path):
    doc = opened(window, tmp_path)
    run_events(window, doc, [ModelLoading("m"), ModelLoaded("m", 1.0), PageDrafting(1, "rapidocr"),
                             RegionsDrafted(1, regions(1), 1.0), PageStarted(1, 0, 3),
                             TextAppended(1, "Text of page 1."),
                             PageDrafting(2, "rapidocr")])  # page 2's drafter runs beside page 1's decode
    state, label, tip = thumb(window, 2)
    assert state == "drafting" and "drafting (OCR) · 0 s" in label and "reading the page" in tip
    assert "converting" not in label
    assert window.current_page == 1, "the window follows the page decoding, not the one drafting"
    assert "converting page 1 (1 of 3)" in window.status_label.text()
    progress = window.progress_label.text()
    assert "page 1: 15 chars" in progress and "page 2" not in progress

    doc.pages[2].drafting_since -= 7  # seven seconds on, the clock ticks
    window.conversion._tick()
    assert "drafting (OCR) · 7 s" in thumb(window, 2)[1]

    run_events(window, doc, [RegionsDrafted(2, regions(2, 3), 7.2), PageDrafting(3, "rapidocr")])
    state, label, tip = thumb(window, 2)
    assert state == "drafted" and label.endswith("drafted") and "drafted in 7.2 s (3 regions)" in tip
    assert thumb(window, 3)[0] == "drafting" and thumb(window, 1)[0] == "converting"

    # the user looks at page 2, drafted ahead: its drafter's regions, grey, waiting their turn
    window.thumbs.setCurrentRow(1)
    assert window.current_page == 2 and len(window.page_view.region_items) == 3
    assert "page 2: drafted" in window.markdown_title.text()
    window.inspection.select(0)
    assert "waits its turn" in window.status_label.text()
    assert "not verified" in window.inspector.header.text()

    # page 1 is done; page 2 (drafted) decodes next: nothing is said of page 3's drafter meanwhile
    run_events(window, doc, [PageDone(1, page_result(1))])
    assert "page 3" not in window.progress_label.text()
    run_events(window, doc, [PageStarted(2, 1, 3)])
    assert thumb(window, 2)[0] == "converting" and "converting page 2 (2 of 3)" in window.status_label.text()

    # cancelled now: page 2 (decoding, with drafts) is partial; page 3, only drafting, is not converted
    run_events(window, doc, [TextAppended(2, "Some")])
    finish(window, "cancelled")
    assert doc.pages[2].phase == "partial" and thumb(window, 2)[0] == "partial"
    assert doc.pages[3].phase == "" and thumb(window, 3)[0] == "open"
    assert "page 2 kept as partial" in window.status_label.text()


def test_a_page_drafted_ahead_then_cancelled_keeps_its_regions_and_is_not_partial(qtbot, window, tmp_path):
    doc = opened(window, tmp_path)
    run_events(window, doc, [PageDrafting(1, "rapidocr"), RegionsDrafted(1, regions(1), 1.0), PageStarted(1, 0, 3),
                             PageDrafting(2, "rapidocr"), RegionsDrafted(2, regions(2), 1.0)])
    finish(window, "cancelled")
    assert doc.pages[2].phase == "" and len(doc.pages[2].regions) == 2
    assert thumb(window, 2)[0] == "open" and "partial" not in thumb(window, 2)[1]
    assert "page 2" not in window.status_label.text()


def test_on_a_cpu_the_next_page_drafts_between_decodes_and_the_status_bar_says_so(qtbot, window, tmp_path):
    doc = opened(window, tmp_path)
    run_events(window, doc, [PageDrafting(1, "rapidocr"), RegionsDrafted(1, regions(1), 1.0),
                             PageStarted(1, 0, 3), PageDone(1, page_result(1)), PageDrafting(2, "rapidocr")])
    assert "page 2: drafting (OCR) · 0 s" in window.progress_label.text()
    assert "scan.pdf: drafting page 2 (OCR)…" in window.status_label.text()
    doc.pages[2].drafting_since -= 5
    window.conversion._tick()
    assert "page 2: drafting (OCR) · 5 s" in window.progress_label.text()
    run_events(window, doc, [RegionsDrafted(2, regions(2), 5.0), PageStarted(2, 1, 3)])
    assert "converting page 2 (2 of 3)" in window.status_label.text()
    assert "page 2: 0 chars" in window.progress_label.text()


def test_a_page_cut_at_the_limit_stays_said_while_the_next_page_drafts(qtbot, window, tmp_path):
    doc = opened(window, tmp_path)
    run_events(window, doc, [PageDrafting(1, "rapidocr"), RegionsDrafted(1, regions(1), 1.0), PageStarted(1, 0, 3),
                             PageDone(1, page_result(1, stop="max_new_tokens")), PageDrafting(2, "rapidocr")])
    assert "cut at the token limit" in window.status_label.text()
    assert "page 2: drafting (OCR)" in window.progress_label.text()


def test_beside_the_decode_a_page_may_decode_before_its_drafts_arrive(qtbot, window, tmp_path):
    doc = opened(window, tmp_path)
    run_events(window, doc, [PageStarted(1, 0, 3), PageDrafting(1, "rapidocr")])  # the race's other side
    state, label, tip = thumb(window, 1)
    assert state == "drafting" and "decode has started without drafts" in tip
    assert "page 1: drafting (OCR) · 0 s" in window.progress_label.text()
    run_events(window, doc, [RegionsDrafted(1, regions(1), 0.5)])
    assert thumb(window, 1)[0] == "converting" and "page 1: 0 chars" in window.progress_label.text()


def test_a_page_decoded_before_its_regions_says_so_while_the_next_page_converts(qtbot, window, tmp_path):
    """The run decodes page 2 while page 1, its text written, waits for its drafter's regions."""
    doc = opened(window, tmp_path)
    run_events(window, doc, [PageDrafting(1, "rapidocr"), PageStarted(1, 0, 3), PageStarted(2, 1, 3)])
    state, label, tip = thumb(window, 1)
    assert state == "drafting" and "its text is written" in tip and "started without drafts" not in tip
    assert "converting page 2 (2 of 3)" in window.status_label.text()
    run_events(window, doc, [RegionsDrafted(1, regions(1), 6.0), PageDone(1, page_result(1))])
    assert thumb(window, 1)[0] == "done" and not doc.pages[1].decoded
    assert "page 2: 0 chars" in window.progress_label.text()


def test_a_page_done_before_its_regions_came_is_done_and_its_overlay_fills_in_when_they_come(qtbot, window,
                                                                                             tmp_path):
    """The run hands page 1 on when its decode ends (no regions yet), then its regions, then the
    page saved with them."""
    from dataclasses import replace

    doc = opened(window, tmp_path)
    run_events(window, doc, [PageDrafting(1, "rapidocr"), PageStarted(1, 0, 3),
                             PageDone(1, replace(page_result(1), regions=[], region_stats=[], region_outputs=[]))])
    assert thumb(window, 1)[0] == "done" and doc.pages[1].regions == []
    run_events(window, doc, [PageStarted(2, 1, 3), RegionsDrafted(1, regions(1), 6.0)])
    assert thumb(window, 1)[0] == "done" and len(doc.pages[1].regions) == 2  # the overlay fills in
    run_events(window, doc, [PageSaved(1, page_result(1, regions=regions(1)))])
    record = doc.pages[1]
    assert thumb(window, 1)[0] == "done" and len(record.result.regions) == 2 and len(record.region_stats) == 2


def test_the_legend_names_the_drafted_frame(qtbot, window):
    from app.thumbnails import STATE_COLOR

    assert STATE_COLOR["drafted"].name() in window.frame_legend.text()
    assert "drafted" in window.frame_legend.text()
