"""What a new user still tripped on, through the app's window: a cancel that asks, panes that tell one
story, a preview note that means truncated, actions that are there when they can act, a document
removed by Delete or its menu, damage said at once, a preview drafter that shows it works, and
memory that does not grow with each document converted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from core.drafters.base import DrafterBase, Region
from core.results import RegionStats, TextSpan
from tests.app.conftest import PATIENCE_MS, make_pdf, streaming
from tests.app.test_first_hour import page_result

ROOT = Path(__file__).resolve().parents[2]


def answer_next_question(qtbot, button, asked: list) -> None:
    """Answer the next modal question with ``button``, recording its title and text in ``asked``."""
    def answer():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer)
            return
        asked.append((box.windowTitle(), box.text()))
        box.button(button).click()

    QTimer.singleShot(0, answer)


def slow_conversion(app_settings):
    conversion = app_settings.conversion()
    conversion.max_new_tokens = 2000
    app_settings.set_conversion(conversion)


# -- a cancel asks ------------------------------------------------------------------------------


def test_escape_asks_before_cancelling_and_no_goes_on_converting(qtbot, window, app_settings, tmp_path):
    from PySide6.QtGui import QKeySequence

    slow_conversion(app_settings)
    assert window.cancel_action.shortcut() == QKeySequence("Esc")
    window.add_files([make_pdf(tmp_path / "long.pdf", pages=2)])
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    asked: list = []
    answer_next_question(qtbot, QMessageBox.StandardButton.No, asked)
    window.cancel_action.trigger()  # what Esc and the toolbar's Cancel do
    assert len(asked) == 1
    title, text = asked[0]
    assert title == "Cancel the conversion?"
    assert "long.pdf is converting" in text and "Finished pages are kept and converting again resumes" in text
    assert window.conversion.busy and window.documents[0].status == "converting"
    assert not window.conversion.worker.is_cancelled()
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        answer_next_question(qtbot, QMessageBox.StandardButton.Yes, asked)
        window.cancel_action.trigger()
    assert finished.args == ["cancelled"] and len(asked) == 2
    assert window.documents[0].status == "cancelled"
    assert not window.cancel_conversion(), "nothing converts: nothing to cancel or ask"
    assert len(asked) == 2


# -- one story in both panes --------------------------------------------------------------------


def test_a_cancelled_pages_regions_are_coloured_as_the_inspector_tells_them(qtbot, window, app_settings, tmp_path):
    """A region drawn red (0 % accepted) on a cancelled page is one the inspector calls verified with
    0 % accepted, and a region the inspector calls not verified is drawn grey, never red."""
    from app.page_view import GREY

    slow_conversion(app_settings)
    window.add_files([make_pdf(tmp_path / "long.pdf", pages=2)])
    doc = window.documents[0]
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.conversion.cancel()
    partial = [n for n, r in doc.pages.items() if r.phase == "partial"]
    assert partial
    window.show_page(partial[0])
    record = doc.pages[partial[0]]
    assert record.regions
    # one region verified on its crop with nothing accepted, the others not reached: both stories told
    region = record.regions[0]
    record.region_stats = [RegionStats(region.label, region.bbox, drafted_tokens=12, accepted_tokens=0,
                                       forward_passes=3)] + [None] * (len(record.regions) - 1)
    window.show_page(partial[0])
    for index, item in enumerate(window.page_view.region_items):
        window.inspection.select(index)
        header = window.inspector.header.text()
        if item.rate is None:
            assert "not verified" in header, header
            assert item.color.getRgb()[:3] == GREY
        else:
            assert "not verified" not in header, header
            assert f"{item.rate:.0%} of its draft tokens accepted" in header
            assert "the page was not finished" in header
    window.inspection.select(0)
    assert window.page_view.region_items[0].rate == 0.0
    assert "0% of its draft accepted" in window.status_label.text()


def test_switching_documents_replaces_the_last_documents_status_line(qtbot, window, tmp_path):
    first, second = window.add_files([make_pdf(tmp_path / "first.pdf"), make_pdf(tmp_path / "second.pdf", 2)],
                                     convert=False)
    window.queue.setCurrentRow(0)
    window.set_status("first.pdf: page 1 failed: something only first.pdf has")
    window.queue.setCurrentRow(1)
    line = window.status_label.text()
    assert "first.pdf" not in line
    assert line.startswith("second.pdf: 2 pages") and "not converted" in line


def test_the_inspector_says_which_share_the_colour_shows(qtbot, window, tmp_path):
    doc = window.add_files([make_pdf(tmp_path / "shares.pdf")], convert=False)[0]
    regions = [Region("text", (20, 20, 300, 80), "Hello wrld, this is txt.", "textlayer")]
    stats = [RegionStats("text", regions[0].bbox, drafted_tokens=10, accepted_tokens=4, forward_passes=3)]
    markdown = "Hello world, this is text."
    doc.pages[1].finished(page_result(1, regions=regions, stats=stats, markdown=markdown))
    window.show_page(1)
    window.inspection.select(0)
    header = window.inspector.header.text()
    assert "colour: 40% of its draft tokens accepted on the region" in header
    assert "5 of 7 draft words kept (71%)" in header and "words compared below" in header


# -- a region's Markdown, found where it is -----------------------------------------------------


def formula_pdf(path):
    """A page of three paragraphs around two display formulas (a math text's page)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=420, height=560)
    y = 60
    blocks = ["Consider the energy of a body at rest and its mass.",
              "E = m c^2",
              "The second paragraph derives the kinetic energy of a moving body from it.",
              "K = (gamma - 1) m c^2",
              "A third paragraph closes the page with a remark on units."]
    for text in blocks:
        page.insert_text((40, y), text, fontsize=10)
        y += 70
    doc.save(str(path))
    doc.close()
    return path


def test_a_region_of_a_formula_page_selects_its_own_text_in_both_tabs(qtbot, window, tmp_path):
    """The engine attributes output to the draft it was accepted from, and text the model writes
    itself to the draft before it: a formula region's spans run on into the next paragraph's first
    words and pick up a stray word further down. Clicking the region selects its formula, not three
    paragraphs cut mid-sentence, and the Rendered tab highlights that formula, not a letter elsewhere."""
    doc = window.add_files([formula_pdf(tmp_path / "formulas.pdf")], convert=False)[0]
    regions = [Region("text", (40, 40, 380, 70), "Consider the energy of a body at rest and its mass.", "textlayer"),
               Region("formula", (40, 110, 380, 140), "E = m c^2", "textlayer"),
               Region("text", (40, 180, 380, 210),
                      "The second paragraph derives the kinetic energy of a moving body from it.", "textlayer"),
               Region("formula", (40, 250, 380, 280), "K = (gamma - 1) m c^2", "textlayer"),
               Region("text", (40, 320, 380, 350), "A third paragraph closes the page with a remark on units.",
                      "textlayer")]
    paragraphs = ["Consider the energy of a body at rest and its mass.", "$$\nE = m c^2\n$$",
                  "The second paragraph derives the kinetic energy of a moving body from it.",
                  "$$\nK = (\\gamma - 1) m c^2\n$$", "A third paragraph closes the page with a remark on units."]
    markdown = "\n\n".join(paragraphs)
    at = [markdown.index(p) for p in paragraphs]
    second_start = at[2]
    spans = [TextSpan(0, 0, at[1]),
             TextSpan(1, at[1], second_start + len("The second")),          # runs on into paragraph 2
             TextSpan(2, second_start + len("The second"), at[3]),
             TextSpan(3, at[3], at[4]),
             TextSpan(4, at[4], at[4] + len("A third paragraph closes")),
             TextSpan(1, at[4] + len("A third paragraph closes"), at[4] + len("A third paragraph closes the")),
             TextSpan(4, at[4] + len("A third paragraph closes the"), len(markdown))]
    stats = [RegionStats(r.label, r.bbox, drafted_tokens=8, accepted_tokens=6, forward_passes=3) for r in regions]
    doc.pages[1].finished(page_result(1, regions=regions, stats=stats, markdown=markdown, spans=spans))
    window.show_page(1)
    view = window.markdown_view
    window.inspection.select(1)
    source = view.source.textCursor().selectedText().replace("\u2029", "\n")
    assert source == "$$\nE = m c^2\n$$", source
    rendered = view.rendered.textCursor()
    assert rendered.hasSelection()
    shown = view.rendered.toPlainText()
    start, end = rendered.selectionStart(), rendered.selectionEnd()
    assert start < shown.index("The second paragraph") and end > shown.index("Consider") + len("Consider"), \
        (start, end, shown)
    window.inspection.select(2)
    source = view.source.textCursor().selectedText()
    assert source == paragraphs[2], source
    picked = view.rendered.textCursor().selectedText()
    assert picked and picked in paragraphs[2] and len(picked) > 20, picked
    window.inspection.select(4)
    assert view.source.textCursor().selectedText() == paragraphs[4]


# -- the preview note ---------------------------------------------------------------------------


def test_truncated_in_preview_is_said_only_when_the_preview_is_cut(qtbot, window, tmp_path):
    from app.markdown_view import PREVIEW_CHARS

    view = window.markdown_view
    text = ""
    for n in range(40):  # a page of about 400 characters streams in; the rendered copy lags behind
        text += f"word{n} streams on. "
        view.set_texts(page=text, document=text, live=True)
        assert "truncated" not in view.info.text(), view.info.text()
        assert not view.preview_truncated
    qtbot.wait(200)
    assert "truncated" not in view.info.text()
    long = "A line of a very long page.\n" * (PREVIEW_CHARS // 20)
    view.set_texts(page=long, document=long)
    assert view.preview_truncated and "truncated in preview" in view.info.text()


# -- actions there when they can act ------------------------------------------------------------


def test_copy_markdown_is_disabled_with_nothing_to_copy(qtbot, window, tmp_path):
    assert not window.copy_action.isEnabled()
    doc = window.add_files([make_pdf(tmp_path / "copy.pdf")], convert=False)[0]
    assert not window.copy_action.isEnabled(), "a document not converted shows no Markdown"
    doc.pages[1].finished(page_result(1))
    window.show_page(1)
    assert window.copy_action.isEnabled()
    window.copy_action.trigger()
    assert QApplication.clipboard().text() == "Text of page 1."
    window.remove_current()
    assert not window.documents and not window.copy_action.isEnabled()


def test_delete_and_the_lists_menu_remove_a_document_asking_while_it_converts(qtbot, window, app_settings,
                                                                              tmp_path):
    from PySide6.QtGui import QKeySequence

    assert window.remove_action.shortcut() == QKeySequence(QKeySequence.StandardKey.Delete)
    assert window.remove_action in window.queue.actions()
    a, b = window.add_files([make_pdf(tmp_path / "a.pdf"), make_pdf(tmp_path / "b.pdf")], convert=False)
    menu = window.queue_menu()
    assert window.remove_action in menu.actions() and window.convert_action in menu.actions()
    window.queue.setCurrentRow(0)
    window.remove_action.trigger()
    assert window.documents == [b] and window.current is b
    # converting: asked first; No keeps it converting, Yes cancels and removes it
    slow_conversion(app_settings)
    window.convert_current()
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    asked: list = []
    answer_next_question(qtbot, QMessageBox.StandardButton.No, asked)
    window.remove_action.trigger()
    assert asked and asked[0][0] == "Remove while converting?" and "b.pdf is converting" in asked[0][1]
    assert window.documents == [b] and window.conversion.running is b
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        answer_next_question(qtbot, QMessageBox.StandardButton.Yes, asked)
        window.remove_action.trigger()
    assert window.documents == [] and window.queue.count() == 0
    assert len(asked) == 2


# -- damage and preview drafting said at once ---------------------------------------------------


def test_a_repaired_pdf_says_it_is_damaged_when_opened(qtbot, window, tmp_path):
    path = make_pdf(tmp_path / "cut.pdf", pages=3)
    data = path.read_bytes()
    path.write_bytes(data[:data.rfind(b"endobj")])  # cut inside the last object, as a broken download
    doc = window.add_files([path], convert=False)[0]
    assert doc.damaged and "repair" in doc.damaged
    item = window.queue.item(0)
    assert "damaged" in item.text() and "repair" in item.toolTip()
    assert "damaged" in window.status_label.text() and "repair" in window.status_label.text()


def test_a_scan_opened_without_converting_shows_its_preview_drafter_at_work(qtbot, window, tmp_path, monkeypatch):
    import threading

    import core.api

    release = threading.Event()

    class SlowOCR(DrafterBase):
        name = "rapidocr"

        def draft(self, page):
            release.wait(PATIENCE_MS / 1000)
            return [Region("text", (20, 20, 300, 80), "OCR text", "rapidocr")]

    monkeypatch.setattr(core.api, "get_drafter", lambda name: SlowOCR())
    settings = window.app_settings.conversion()
    settings.drafter = "rapidocr"
    window.app_settings.set_conversion(settings)
    window.add_files([make_pdf(tmp_path / "scan.pdf")], convert=False)
    try:
        line = window.status_label.text()
        assert "Page 1: drafting (OCR)" in line and "regions" in line, line
        assert "drafting (OCR)" in window.markdown_title.text()
    finally:
        release.set()
    qtbot.waitUntil(lambda: bool(window.page_view.region_items), timeout=PATIENCE_MS)
    assert "drafting" not in window.status_label.text() and "drafting" not in window.markdown_title.text()


# -- region labels ------------------------------------------------------------------------------


def test_region_labels_read_as_words_stay_on_the_page_and_clear_of_other_regions(qtbot, window, tmp_path):
    """A dense page: regions stacked with no gap, one reaching the right edge. Each label names the
    kind in words, lies inside the page and covers no other region's text (the margins are free)."""
    from PySide6.QtCore import QRectF

    doc = window.add_files([make_pdf(tmp_path / "dense.pdf")], convert=False)[0]
    regions = [Region("title", (60, 30, 300, 50), "Results", "textlayer")]
    regions += [Region("text", (60, 50 + 20 * k, 300, 70 + 20 * k), f"Line {k}", "textlayer") for k in range(12)]
    regions += [Region("page_number", (300, 430, 360, 446), "7", "textlayer")]  # at the page's right edge
    doc.pages[1].finished(page_result(1, regions=regions, markdown="Results"))
    window.show_page(1)
    window.labels_action.trigger()  # Show region labels
    assert window.labels_action.isChecked()
    view = window.page_view
    page = view.sceneRect()
    for zoom in (view.zoom_fit, view.zoom_in, view.zoom_in):
        zoom()
        scale = view.transform().m11()
        for i, label in enumerate(view.label_items):
            assert label.isVisible()
            size = label.boundingRect()
            rect = QRectF(label.pos().x() + size.left() / scale, label.pos().y() + size.top() / scale,
                          size.width() / scale, size.height() / scale)
            assert page.adjusted(-0.5, -0.5, 0.5, 0.5).contains(rect), (i, label.text(), rect, page)
            others = [item.rect() for j, item in enumerate(view.region_items) if j != i]
            assert not any(rect.intersects(o) for o in others), (i, label.text(), rect)
    names = [label.text() for label in view.label_items]
    assert names[0] == "1 title" and names[-1] == "14 page number"
    assert "page_number" not in view.region_items[-1].toolTip() and "page number" in view.region_items[-1].toolTip()


# -- memory -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ten_documents_converted_in_a_row_keep_the_apps_memory_within_15_percent_of_the_first(tmp_path,
                                                                                              tiny_model):
    """The benchmark converts ten documents one after another in the window (each kept in the list)
    in a process of its own; its resident memory after the tenth is within 15 % of that after the
    first, whatever the machine (the growth per document is reported, and each run's freed memory
    is given back to the system as it ends)."""
    import json
    import subprocess
    import sys

    out = tmp_path / "memory.json"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "app_memory.py"), "--documents", "10", "--pages", "2",
                           "--model", tiny_model, "--json", str(out), "--limit", "0.15"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.exists(), proc.stderr[-2000:]
    report = json.loads(out.read_text("utf-8"))
    assert report["statuses"] == ["done"] * 10, report
    first, last = report["rss_mb"][0], report["rss_mb"][-1]
    assert last <= first * 1.15, report
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_removed_document_leaves_nothing_behind_and_zoomed_pages_are_kept_within_a_budget(qtbot, window,
                                                                                          tmp_path):
    from app.main_window import PAGE_CACHE_BYTES

    doc, other = window.add_files([make_pdf(tmp_path / "big.pdf", pages=4), make_pdf(tmp_path / "small.pdf")],
                                  convert=False)
    window.queue.setCurrentRow(0)
    doc.pages[1].finished(page_result(1))
    for page in range(1, 5):  # each page looked at closely, as zooming in renders it again
        window.show_page(page)
        window._page_image(doc, page, 400)
        assert sum(image.sizeInBytes() for _, image in window._page_cache.values()) <= PAGE_CACHE_BYTES
    window.remove_current()
    assert window.current is other
    assert not doc.pages and doc.previous is None
    assert not [key for key in window._page_cache if key[0] == str(doc.path)]
