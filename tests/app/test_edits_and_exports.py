"""A user's look: edit a page, see it marked, export HTML, DOCX, JSON and Markdown with the edit,
reopen the document and find the edit, be asked before a conversion replaces it; every document
exported at once."""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import PATIENCE_MS, drop_files, open_window

pytestmark = pytest.mark.slow

EDIT = "# Corrected heading\n\nThe words the page really says, with $x^2$."


def _edit_page(window, text: str) -> None:
    view = window.markdown_view
    assert view.edit_button.isEnabled()
    view.edit_button.setChecked(True)
    assert view.editing and not view.source.isReadOnly() and view.tabs.currentWidget() is view.source
    view.source.setPlainText(text)
    view.edit_button.setChecked(False)
    assert not view.editing and view.source.isReadOnly()


def test_an_edit_stays_is_exported_and_is_asked_about(qtbot, window, sample_pdf, tmp_path, app_settings, engines,
                                                      monkeypatch):
    import docx

    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [sample_pdf])
    doc = window.current
    assert window.current_page == 1 and not window.markdown_view.edited_mark.isVisibleTo(window)
    _edit_page(window, EDIT)
    view = window.markdown_view
    assert view.page_text() == EDIT and doc.page_markdown(1) == EDIT
    assert view.edited_mark.isVisibleTo(window) and view.revert_button.isVisibleTo(window)
    assert "<h1>Corrected heading</h1>" in view.rendered.toHtml() or "Corrected heading" in view.rendered.toPlainText()

    out = tmp_path / "export"
    md = window.exports.markdown_to(out / "doc.md")
    assert md.read_text("utf-8") == EDIT + "\n"
    html = window.exports.html_to(out / "doc.html").read_text("utf-8")
    assert "Corrected heading" in html and "<msup>" in html and "<script" not in html
    word = docx.Document(str(window.exports.docx_to(out / "doc.docx")))
    assert [p.text for p in word.paragraphs][0] == "Corrected heading"
    assert word.element.body.findall(".//{http://schemas.openxmlformats.org/officeDocument/2006/math}oMath")
    page = json.loads(window.exports.json_to(out / "doc.json").read_text("utf-8"))["pages"][0]
    assert page["edited"] and page["markdown"] == EDIT and page["model_markdown"] != EDIT
    assert page["regions"] and "review" in page

    # re-opened in a new window: converting again keeps the finished page, and the edit with it
    again = open_window(qtbot, app_settings, engines)
    again.confirm_quit = lambda: True
    with qtbot.waitSignal(again.document_finished, timeout=PATIENCE_MS):
        drop_files(again, [sample_pdf])
    assert again.current.page_markdown(1) == EDIT and again.markdown_view.edited_mark.isVisibleTo(again)

    # converting from scratch would write the page anew: asked first; no keeps the edit
    asked = []
    monkeypatch.setattr("app.page_editing.ask_yes_no", lambda *a: asked.append(a[2]) or False)
    again.convert_current(fresh=True)
    assert asked and "page 1" in asked[0] and again.conversion.running is None
    assert again.current.page_markdown(1) == EDIT
    monkeypatch.setattr("app.page_editing.ask_yes_no", lambda *a: True)
    with qtbot.waitSignal(again.document_finished, timeout=PATIENCE_MS):
        again.convert_current(fresh=True)
    assert again.current.page_markdown(1) != EDIT and not again.markdown_view.edited_mark.isVisibleTo(again)


def test_revert_and_export_every_document_at_once(qtbot, window, sample_pdf, tmp_path, monkeypatch):
    from tests.app.conftest import make_pdf

    (tmp_path / "other").mkdir()
    other = make_pdf(tmp_path / "other" / "sample.pdf")
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [sample_pdf])
    model = window.current.page_markdown(1)
    _edit_page(window, EDIT)
    window.markdown_view.revert_button.click()
    assert window.current.page_markdown(1) == model and not window.markdown_view.edited_mark.isVisibleTo(window)
    _edit_page(window, EDIT)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [other])
    assert window.export_batch_action.isEnabled()

    folder = tmp_path / "batch"
    written = window.exports.batch_to(folder, ["html", "json"], "{n}-{stem}.{ext}")
    assert sorted(p.name for p in written) == ["1-sample.html", "1-sample.json", "2-sample.html", "2-sample.json"]
    assert "Corrected heading" in (folder / "1-sample.html").read_text("utf-8")
    assert "Corrected heading" not in (folder / "2-sample.html").read_text("utf-8")
    monkeypatch.setattr(window.exports, "ask_overwrite", lambda paths: False)
    (folder / "2-sample.json").write_text("mine")
    assert window.exports.batch_to(folder, ["json"], "{n}-{stem}.{ext}") is None
    assert (folder / "2-sample.json").read_text() == "mine"
    errors = []
    monkeypatch.setattr(window, "show_error", lambda title, text: errors.append(text))
    assert window.exports.batch_to(folder, ["json"], "{stem}.{ext}") is None
    assert errors and "would both be written there" in errors[0]


def test_convert_this_page_again_redoes_only_that_page(qtbot, window, tmp_path, monkeypatch):
    from tests.app.conftest import make_pdf

    pdf = make_pdf(tmp_path / "two.pdf", pages=2)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [pdf])
    window.show_page(2)
    assert window.page_again_action.isEnabled()
    _edit_page(window, EDIT)
    monkeypatch.setattr("app.page_editing.ask_yes_no", lambda *a: False)
    window.page_again_action.trigger()
    assert window.conversion.running is None and window.current.page_markdown(2) == EDIT
    monkeypatch.setattr("app.page_editing.ask_yes_no", lambda *a: True)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.page_again_action.trigger()
    doc = window.current
    assert doc.pages[1].kept and not doc.pages[2].kept  # page 1 taken back, page 2 converted
    assert sorted(doc.results) == [1, 2] and doc.page_markdown(2) != EDIT
