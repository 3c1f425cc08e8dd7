"""The review list (stepping through the places where the model departs from the page) and the page
and its Markdown scrolling together, in the main window without a model."""

from __future__ import annotations

import pytest

from core.drafters.base import Region
from core.results import PageResult, PageStats, RegionStats, TextSpan

LONG = " ".join(f"Sentence {n} of the opening paragraph explains the method." for n in range(40))
CLOSING = " ".join(f"Closing remark {n} summarises the findings." for n in range(40))
FORMULA = "$$\n\\alpha_{i} = \\sum_{j} \\beta_{ij} x_{j}\n$$"


def _regions() -> list[Region]:
    return [Region("title", (20, 20, 340, 40), "Results", "textlayer"),
            Region("text", (20, 50, 340, 200), LONG, "textlayer"),
            Region("formula", (20, 210, 340, 240), "ai= Σ βij xj", "rapidocr"),
            Region("text", (20, 250, 340, 440), CLOSING, "textlayer")]


def _result(page: int, markdown: str, spans=None) -> PageResult:
    regions = _regions()
    stats = [RegionStats(r.label, r.bbox, drafted_tokens=10, accepted_tokens=8, forward_passes=2) for r in regions]
    return PageResult(page=page, width=360, height=460, markdown=markdown, regions=regions, region_stats=stats,
                      region_outputs=[""] * len(regions), spans=spans or [],
                      stats=PageStats(mode="hsd", forward_passes=9, generated_tokens=40, stage2_passes=6))


def _markdown(long: str = LONG, closing: str = CLOSING) -> str:
    return f"# Results\n\n{long}\n\n{FORMULA}\n\n{closing}"


def _engine_spans(markdown: str) -> list[TextSpan]:
    """As the engine credits a formula page: the LaTeX, which no draft held, goes to the paragraph
    above (text the model writes inherits the draft before it); the formula's garbled OCR draft
    contributed one accepted letter, inside the closing paragraph."""
    formula = markdown.index("$$")
    closing = markdown.index("Closing")
    stray = markdown.index("s", closing + 40)
    return [TextSpan(0, 0, 9), TextSpan(1, 9, closing), TextSpan(3, closing, stray), TextSpan(2, stray, stray + 1),
            TextSpan(3, stray + 1, len(markdown))][: 5 if formula else 0]


@pytest.fixture
def window(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from app.main_window import MainWindow
    from app.settings import AppSettings
    from tests.app.conftest import make_pdf

    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    settings.set_cache_dir(tmp_path / "cache")
    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    pdf = make_pdf(tmp_path / "two.pdf", pages=2)
    (doc,) = win.add_files([pdf], convert=False)
    return win, doc


def test_stepping_through_departures_shows_each_on_its_page(window):
    win, doc = window
    first = _markdown(long=LONG.replace("Sentence 7 of", "Sentence 8 of"))
    second = _markdown(closing=CLOSING + " The authors thank their reviewers warmly.")
    doc.pages[1].finished(_result(1, first))
    doc.pages[2].finished(_result(2, second))
    win.show_page(1)
    panel = win.review_panel
    assert panel.summary.text() == "2 places where the model departs from the page's text"
    assert [a.shortcut().toString() for a in (win.next_departure_action, win.prev_departure_action)] == \
        ["F8", "Shift+F8"]
    from app.navigation import shortcuts_html

    listed = shortcuts_html([win.next_departure_action, win.prev_departure_action])
    assert "Next departure from the page" in listed and "scroll the page" in listed

    win.next_departure_action.trigger()
    d = panel.current()
    assert (d.page, d.region, d.kind, d.model_text, d.page_text) == (1, 1, "changed", "8", "7")
    assert win.bottom_tabs.currentWidget() is panel and win.current_page == 1
    assert win.page_view.highlighted == 1
    assert win.markdown_view.source.textCursor().selectedText() == "8"
    assert panel.model_words.toPlainText() == "8" and panel.page_words.toPlainText() == "7"

    win.next_departure_action.trigger()
    d = panel.current()
    assert (d.page, d.region, d.kind) == (2, 3, "invented")
    assert win.current_page == 2 and win.page_view.highlighted == 3
    assert win.markdown_view.source.textCursor().selectedText() == "The authors thank their reviewers warmly"
    assert "no draft holds" in panel.page_words.toPlainText()

    win.prev_departure_action.trigger()
    assert panel.current().page == 1 and win.current_page == 1
    win.prev_departure_action.trigger()  # round the start: the last place
    assert panel.current().page == 2


def test_a_poorly_drafted_page_is_one_line_stepped_over(window):
    win, doc = window
    result = _result(1, _markdown())
    result.regions = [Region("text", (20, 50, 340, 440), "Rcsnlts Scntcncc O of tbc opcning", "rapidocr")]
    result.region_stats = result.region_stats[:1]
    doc.pages[1].finished(result)
    doc.pages[2].finished(_result(2, _markdown(long=LONG.replace("method", "methods", 1))))
    win.show_page(1)
    panel = win.review_panel
    assert panel.list.count() == 2 and "agree too little" in panel.summary.text()
    assert "agree on only" in panel.list.item(0).text()
    win.next_departure_action.trigger()
    assert panel.current().page == 2 and panel.list.currentRow() == 1


def test_a_click_on_a_formula_selects_the_formula(window):
    """The engine's spans credit a formula's LaTeX to the paragraph above it; a click on the formula
    region selected the one letter its draft shared, in another paragraph."""
    win, doc = window
    markdown = _markdown()
    doc.pages[1].finished(_result(1, markdown, _engine_spans(markdown)))
    win.show_page(1)
    win.inspection.select(2)
    selected = win.markdown_view.source.textCursor().selectedText().replace("\u2029", "\n")
    assert selected == FORMULA
    assert win.page_view.highlighted == 2
    rendered = win.markdown_view.rendered.textCursor().selectedText()
    assert "ij" in rendered and "Closing" not in rendered and "Sentence" not in rendered
    win.inspection.select(1)
    assert win.markdown_view.source.textCursor().selectedText() == LONG


def test_page_and_markdown_scroll_together(window, qtbot):
    win, doc = window
    markdown = _markdown()
    doc.pages[1].finished(_result(1, markdown))
    win.show_page(1)
    view, md = win.page_view, win.markdown_view
    md.tabs.setCurrentWidget(md.source)
    view.zoom_by(6)
    # the page scrolled to its end: the closing paragraph's Markdown comes to the top
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    assert view.region_in_view() == 3
    assert abs(md.top_offset() - markdown.index("Closing remark 0")) < 80
    # ... and back to its top: the title's
    bar.setValue(bar.minimum())
    assert view.region_in_view() == 0 and md.top_offset() < 20
    # the Markdown scrolled: the page highlights (and shows) the region whose text is at the top
    assert view.highlighted is None
    line = md.source.document().findBlock(markdown.index("Sentence 20")).firstLineNumber()
    md.source.verticalScrollBar().setValue(line + 2)  # the reader scrolls into the long paragraph
    assert view.highlighted == 1
    md.tabs.setCurrentWidget(md.rendered)
    md.set_scope("document")
    md.set_scope("page")  # rendered again, its place restored: no reader scrolled, nothing follows
    assert view.highlighted == 1
    md.tabs.setCurrentWidget(md.source)
    assert view.mapToScene(view.viewport().rect()).boundingRect().intersects(view.region_items[1].sceneBoundingRect())
    # in the rendered tab too
    md.tabs.setCurrentWidget(md.rendered)
    md.rendered.verticalScrollBar().setValue(0)
    assert view.highlighted == 0
