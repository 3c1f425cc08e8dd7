"""Which stretch of a page's Markdown a region owns: what a click on the region selects is what
"Convert this region again" replaces (``core.api.region_span``, one rule for both), on the pages
where a selection rule and a replacement rule of their own parted: two regions the model wrote as
one paragraph, a page without blank lines, a formula the alignment credits to the paragraph above,
text that occurs twice, a draft the model partly rejected, a page the user edited, and a region
whose text is not in the Markdown (nothing selected, nothing replaced, one line that says so)."""

from __future__ import annotations

import pytest

from core.api import RegionReading, place_reading
from core.drafters.base import Region
from core.results import PageResult, PageStats, RegionStats, TextSpan

FORMULA = "$$\n\\int_0^1 x\\,dx\n$$"


def _result(markdown: str, regions: list[Region], spans=()) -> PageResult:
    stats = [RegionStats(r.label, r.bbox, drafted_tokens=8, accepted_tokens=6, forward_passes=3) for r in regions]
    return PageResult(page=1, width=360.0, height=460.0, markdown=markdown, regions=regions, region_stats=stats,
                      region_outputs=[""] * len(regions), spans=list(spans), stats=PageStats(mode="hsd"))


def _regions(*drafts: str, labels=None) -> list[Region]:
    labels = labels or ["text"] * len(drafts)
    return [Region(label, (36, 40 + 60 * i, 300, 80 + 60 * i), draft, "textlayer")
            for i, (label, draft) in enumerate(zip(labels, drafts))]


def _engine_spans(markdown: str, pieces: list[str]) -> list[TextSpan]:
    """The engine's spans: region i wrote ``pieces[i]``, found in order."""
    spans, at = [], 0
    for i, piece in enumerate(pieces):
        at = markdown.index(piece, at)
        spans.append(TextSpan(i, at, at + len(piece)))
        at += len(piece)
    return spans


_MERGED = "Alpha beta gamma. Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron."
_LINES = "# Results of page 1\nLine 0: speculative decoding checks every draft.\nA second paragraph closes the page."
_TWICE = "Total\n\nSome words here.\n\nTotal"
_FORMULA_PAGE = f"Some words first.\n\n{FORMULA}\n\nAnd after."
_PAGE = "# Results of page 1\n\nLine 0: speculative decoding verifies drafts.\n\nA second paragraph closes the page."

#: name -> (model's Markdown, regions, engine spans, the Markdown shown (None: the model's), region, its stretch)
CASES = {
    # the model wrote two regions as one paragraph: the first region's words are its stretch
    "two regions in one paragraph": (
        _MERGED, _regions("Alpha beta gamma.", "Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron."),
        (), None, 0, "Alpha beta gamma."),
    # ... and the second keeps to its own, though it wrote most of the paragraph
    "the other region of that paragraph": (
        _MERGED, _regions("Alpha beta gamma.", "Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron."),
        (), None, 1, "Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron."),
    # a page without blank lines: the whole line, its heading mark with it (a reading keeps the mark)
    "a heading on a page without blank lines": (
        _LINES, _regions("Results of page 1", "Line 0: speculative decoding verifies drafts.",
                         "A second paragraph closes the page.", labels=["title", "text", "text"]),
        (), None, 0, "# Results of page 1"),
    # the model rejected part of the draft ("checks every draft"): still its whole line
    "a partly rejected draft on a page without blank lines": (
        _LINES, _regions("Results of page 1", "Line 0: speculative decoding verifies drafts.",
                         "A second paragraph closes the page.", labels=["title", "text", "text"]),
        (), None, 1, "Line 0: speculative decoding checks every draft."),
    # a formula's LaTeX shares no word with a draft: the engine's span finds it
    "a formula the alignment does not place": (
        _FORMULA_PAGE, _regions("Some words first.", "", "And after.", labels=["text", "formula", "text"]),
        _engine_spans(_FORMULA_PAGE, ["Some words first.", FORMULA, "And after."]), None, 1, FORMULA),
    # no drafts to align (the engine's spans only), the same text twice: each region its own copy
    "the first of two copies": (
        _TWICE, _regions("", "", ""), _engine_spans(_TWICE, ["Total", "Some words here.", "Total"]), None, 0,
        (0, 5)),
    "the second of two copies": (
        _TWICE, _regions("", "", ""), _engine_spans(_TWICE, ["Total", "Some words here.", "Total"]), None, 2,
        (len(_TWICE) - 5, len(_TWICE))),
    # the user joined the title and the paragraph: the paragraph's words, not the title's
    "a page the user joined into one paragraph": (
        _PAGE, _regions("Results of page 1", "Line 0: speculative decoding verifies drafts.",
                        "A second paragraph closes the page.", labels=["title", "text", "text"]),
        (), _PAGE.replace("\n\nA second", " A second"), 2, "A second paragraph closes the page."),
    # ... and the paragraph above keeps only its own words, not the formula the alignment gave it
    "the paragraph above a formula": (
        _FORMULA_PAGE, _regions("Some words first.", "", "And after.", labels=["text", "formula", "text"]),
        _engine_spans(_FORMULA_PAGE, ["Some words first.", FORMULA, "And after."]), None, 0, "Some words first."),
    # the user pasted a third copy: which copy is whose is no longer known, nothing is replaced
    "a copy the user's edit added": (
        _TWICE, _regions("", "", ""), _engine_spans(_TWICE, ["Total", "Some words here.", "Total"]),
        _TWICE + "\n\nTotal", 2, None),
    # the same words twice with drafts: the alignment keeps each copy its region's
    "the second of two drafted copies": (
        "Total 12\n\nSome words here.\n\nTotal 12", _regions("Total 12", "Some words here.", "Total 12"),
        (), None, 2, (28, 36)),
    # the model rewrote part of the paragraph: the paragraph is still the region's
    "a partly rejected draft": (
        _PAGE.replace("verifies drafts", "checks each of the drafts it is given"),
        _regions("Results of page 1", "Line 0: speculative decoding verifies drafts.",
                 "A second paragraph closes the page.", labels=["title", "text", "text"]),
        (), None, 1, "Line 0: speculative decoding checks each of the drafts it is given."),
    # a region none of whose words the model wrote
    "a region whose text is not in the Markdown": (
        _PAGE, _regions("Results of page 1", "Line 0: speculative decoding verifies drafts.",
                        "A second paragraph closes the page.", "Quarterly revenue grew by twelve percent",
                        labels=["title", "text", "text", "text"]),
        (), None, 3, None),
    # one word of the region's draft stands in another paragraph: that word is not its stretch
    "a stray word": (
        _PAGE + " Quarterly.", _regions("Results of page 1", "Line 0: speculative decoding verifies drafts.",
                                       "A second paragraph closes the page.",
                                       "Quarterly revenue grew by twelve percent over the year before",
                                       labels=["title", "text", "text", "text"]),
        (), None, 3, None),
}


def _expected(text: str, stretch) -> tuple[int, int] | None:
    if stretch is None or isinstance(stretch, tuple):
        return stretch
    assert text.count(stretch) == 1, stretch
    return text.index(stretch), text.index(stretch) + len(stretch)


@pytest.fixture
def shown(qtbot, tmp_path):
    """A window showing page 1 of a document whose result (and edit) a test sets: ``shown(result,
    text)`` -> (window, the Markdown shown)."""
    from PySide6.QtCore import QSettings

    from app.page_editing import save_edit
    from app.settings import AppSettings
    from tests.app.conftest import make_pdf, open_window

    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    settings.set_cache_dir(tmp_path / "cache")
    win = open_window(qtbot, settings)
    (doc,) = win.add_files([make_pdf(tmp_path / "doc.pdf")], convert=False)

    def show(result, text=None):
        doc.pages[1].finished(result)
        if text is not None:
            assert save_edit(win, doc, 1, text)
        win.show_page(1)
        return win, doc.page_markdown(1)

    return show


def _selected(win) -> tuple[int, int] | None:
    cursor = win.markdown_view.source.textCursor()
    return (cursor.selectionStart(), cursor.selectionEnd()) if cursor.hasSelection() else None


@pytest.mark.parametrize("case", list(CASES))
def test_a_click_selects_the_stretch_a_region_again_replaces(shown, case):
    markdown, regions, spans, edited, index, stretch = CASES[case]
    result = _result(markdown, regions, spans)
    win, text = shown(result, edited)
    assert text == (edited if edited is not None else markdown)
    win.inspection.select(0 if index else 1)  # something else selected first: a click moves it
    win.inspection.select(index)
    replaced = place_reading(result, text, RegionReading(1, index, regions[index].label, "A new reading.", "test"))
    expected = _expected(text, stretch)
    assert (_selected(win), replaced.span) == (expected, expected), "(selected, replaced) == (expected, expected)"
    if expected is None:
        assert not replaced.placed and "not found in the page's Markdown" in replaced.note
        assert "not found in the page's Markdown" in win.status_label.text()
        assert not win.markdown_view.rendered.textCursor().hasSelection()  # no other region's text either
