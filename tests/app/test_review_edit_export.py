"""A user's whole path through review and correction, in the app's window: convert a document, step
(F8) to a place where the model's words depart from the page's, correct it in the Markdown pane,
export Word and HTML from the File menu, close the app, open the document again: the correction is
there, and the exported files read back (python-docx, html.parser) as the corrected Markdown.

The model is the replay stand-in (``core.bench.replay``) writing the page's text with one number
misread, as a model misreads: a tiny random model's gibberish agrees with no draft, so its review
is one line saying so and there is no place to step to. The drafter, engine, worker, window,
edits and exports are the app's own."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests.app.conftest import PATIENCE_MS, drop_files, make_pdf, open_window
from tests.core.exports.test_exports import markdown_words

pytestmark = pytest.mark.slow

#: What the stand-in model writes for ``make_pdf``'s page: its text, with "Line 1" misread as "Line 7".
MODEL_PAGE = ("# Results of page 1\n\n"
              "Line 0: speculative decoding verifies drafts. Line 7: speculative decoding verifies drafts. "
              "Line 2: speculative decoding verifies drafts.\n\n"
              "A second paragraph closes the page.")


def misreading_engines(pdf):
    """An ``EngineCache`` whose engine decodes with the replay target reading ``pdf``'s one page as
    ``MODEL_PAGE``, drafted by the text layer."""
    from app.worker import EngineCache
    from core.bench.corpus import region_references, region_spans
    from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
    from core.documents import open_document
    from core.drafters import get_drafter
    from core.engine import Engine

    with open_document(pdf) as doc:
        regions = list(get_drafter("textlayer").draft(doc.page(0)))
    model = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    model.start_document()
    model.set_page(MODEL_PAGE, region_references(MODEL_PAGE, regions, region_spans(MODEL_PAGE, regions)))

    def factory(config, target=None):
        return Engine(config, target=model, drafter=get_drafter("textlayer"))

    return EngineCache(factory)


class BodyWords(HTMLParser):
    """The words a reader of the HTML sees (not its title, style or formulas)."""

    def __init__(self):
        super().__init__()
        self.words, self._hidden = [], 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("title", "style", "script", "math")

    def handle_endtag(self, tag):
        self._hidden -= tag in ("title", "style", "script", "math")

    def handle_data(self, data):
        if not self._hidden:
            self.words += re.findall(r"\w+", data)


def docx_words(path) -> list[str]:
    import docx

    return re.findall(r"\w+", " ".join(p.text for p in docx.Document(str(path)).paragraphs))


def html_words(path) -> list[str]:
    parser = BodyWords()
    parser.feed(path.read_text("utf-8"))
    return parser.words


def test_step_to_a_departure_correct_it_export_and_find_it_after_reopening(qtbot, app_settings, tmp_path,
                                                                           monkeypatch):
    pdf = make_pdf(tmp_path / "results.pdf")
    conversion = app_settings.conversion()
    conversion.max_new_tokens = 512  # the whole page: cut short, the page would be told as truncated
    app_settings.set_conversion(conversion)
    engines = misreading_engines(pdf)
    window = open_window(qtbot, app_settings, engines)
    window.confirm_quit = lambda: True
    window.resize(1200, 760)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [pdf])
    doc = window.current
    assert doc.page_markdown(1) == MODEL_PAGE

    # the review list names the misread number; F8 steps to it
    panel, view = window.review_panel, window.markdown_view
    assert "1 place where the model departs" in panel.summary.text()
    assert window.next_departure_action.shortcut().toString() == "F8"
    page_view = window.page_view
    page_view.zoom_by(6)  # the reader zoomed in: the region is wider than the view
    window.next_departure_action.trigger()
    place = panel.current()
    assert (place.page, place.kind, place.model_text, place.page_text) == (1, "changed", "7", "1")
    assert window.bottom_tabs.currentWidget() is panel
    assert panel.model_words.toPlainText() == "7" and panel.page_words.toPlainText() == "1"
    assert page_view.highlighted == place.region
    region = page_view.region_items[place.region].sceneBoundingRect()
    shown = page_view.mapToScene(page_view.viewport().rect()).boundingRect()
    assert region.width() > shown.width() and shown.contains(region.topLeft())  # where its text begins
    assert doc.pages[1].result.regions[place.region].text.count("Line 1")  # the page's region that reads it
    assert view.source.textCursor().selectedText() == "7"

    # corrected where it was found: Edit page, the misread number typed over, Save edit
    view.tabs.setCurrentWidget(view.source)
    view.edit_button.click()
    assert view.editing and not view.source.isReadOnly()
    cursor = view.source.textCursor()
    start = view.source.toPlainText().index("Line 7") + len("Line ")
    cursor.setPosition(start)
    cursor.setPosition(start + 1, cursor.MoveMode.KeepAnchor)
    view.source.setTextCursor(cursor)
    qtbot.keyClicks(view.source, "1")
    view.edit_button.click()  # Save edit
    corrected = MODEL_PAGE.replace("Line 7", "Line 1")
    assert not view.editing and doc.page_markdown(1) == corrected
    assert view.edited_mark.isVisibleTo(window) and "your edit is kept" in window.status_label.text()
    assert panel.departures() == [] and "0 places" in panel.summary.text()  # the place is put right

    # exported from the File menu, where the save dialog is answered with these paths
    out = tmp_path / "exported"
    out.mkdir()
    answers = iter([out / "results.docx", out / "results.html"])
    monkeypatch.setattr("app.export_actions.QFileDialog.getSaveFileName",
                        lambda *a, **k: (str(next(answers)), ""))
    window.export_docx_action.trigger()
    window.export_html_action.trigger()
    assert "Exported" in window.status_label.text()
    words = markdown_words(corrected)
    assert "7" not in words and docx_words(out / "results.docx") == words
    assert html_words(out / "results.html") == words
    window.close()

    # the app opened again on the same document: the correction is shown, marked, and exported
    again = open_window(qtbot, app_settings, engines)
    again.confirm_quit = lambda: True
    with qtbot.waitSignal(again.document_finished, timeout=PATIENCE_MS):
        drop_files(again, [pdf])
    assert again.current.pages[1].kept  # the finished page came back from the resume store
    assert again.current.page_markdown(1) == corrected
    assert again.markdown_view.edited_mark.isVisibleTo(again)
    assert again.review_panel.departures() == []
    word = again.exports.docx_to(tmp_path / "again.docx")
    assert docx_words(word) == words
