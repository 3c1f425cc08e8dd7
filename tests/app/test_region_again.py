"""A user's look at "Convert this region again": right-click a region of a converted page, convert
it again, find its text replaced in the page's Markdown (marked as edited, kept, exported, undone by
"Model's text", or by undoing the region's conversion); a region whose text is not in the Markdown changes nothing and says so; while a
document converts the action is disabled and its tooltip says why."""

from __future__ import annotations

import pytest

from tests.app.conftest import PATIENCE_MS, drop_files, make_pdf

pytestmark = pytest.mark.slow


def _right_click(qtbot, window, index: int):
    """Right-click region ``index`` on the page as a mouse does; returns the menu it opened."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QContextMenuEvent
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    view = window.page_view
    inside = view.mapFromScene(view.region_items[index].sceneBoundingRect().center())
    QTest.mousePress(view.viewport(), Qt.MouseButton.RightButton, pos=inside)
    QTest.mouseRelease(view.viewport(), Qt.MouseButton.RightButton, pos=inside)
    QApplication.sendEvent(view.viewport(), QContextMenuEvent(QContextMenuEvent.Reason.Mouse, inside,
                                                              view.viewport().mapToGlobal(inside)))
    menu = window.page_edits.region_again.menu
    assert menu is not None and menu.isVisible()
    return menu


def _convert_region(qtbot, window, index: int) -> str:
    menu = _right_click(qtbot, window, index)
    assert window.inspection.selected == index
    action = window.region_again_action
    assert action in menu.actions() and action.isEnabled(), action.toolTip()
    with qtbot.waitSignal(window.page_edits.region_again.done, timeout=PATIENCE_MS) as said:
        action.trigger()
        assert not action.isEnabled() and "being converted again" in action.toolTip()  # off the UI thread
    menu.close()
    return said.args[0]


def test_a_region_converted_again_replaces_its_text_as_an_edit_that_stays(qtbot, window, sample_pdf, tmp_path):
    from app.page_editing import edits_of
    from core.api import PageEdits

    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [sample_pdf])
    doc = window.current
    model = doc.page_markdown(1)
    regions = doc.pages[1].result.regions
    title, body, last = (next(i for i, r in enumerate(regions) if r.text.startswith(start))
                         for start in ("# Results", "Line 0", "A second"))
    action = window.region_again_action
    assert not action.isEnabled() and "Click a region" in action.toolTip()

    # the tiny model's page holds none of the page's words: the region's text cannot be found
    line = _convert_region(qtbot, window, body)
    assert "not found in the page's Markdown" in line and "unchanged" in line
    assert window.status_label.text().startswith(f"Page 1, region {body + 1}")
    assert doc.page_markdown(1) == model and not edits_of(window, doc)

    # a page whose Markdown is the page's own words (the user corrected it): the region's text is found
    page = f"{regions[title].text}\n\n{regions[body].text}\n\n{regions[last].text}"
    assert window.page_edits.region_again.why_not(body) == ""
    from app.page_editing import save_edit

    save_edit(window, doc, 1, page)
    window.show_text()
    line = _convert_region(qtbot, window, body)
    assert "replaced" in line
    new = doc.page_markdown(1)
    assert new != page and regions[body].text not in new
    assert new.startswith(f"{regions[title].text}\n\n") and new.endswith(f"\n\n{regions[last].text}")
    view = window.markdown_view
    assert view.page_text() == new and view.edited_mark.isVisibleTo(window)
    assert PageEdits(edits_of(window, doc).path.parent).text_of(1, model) == new  # kept beside the resume store
    assert window.exports.markdown_to(tmp_path / "out" / "doc.md").read_text("utf-8") == new + "\n"

    # undone: the text the page had before (the user's own edit, still marked as one) ...
    undo = window.page_edits.region_again.undo_action
    assert undo.isEnabled() and undo in _right_click(qtbot, window, body).actions()
    undo.trigger()
    assert doc.page_markdown(1) == page and view.page_text() == page and view.edited_mark.isVisibleTo(window)
    assert not undo.isEnabled() and "Nothing to undo" in undo.toolTip()
    # ... or as any edit is: the model's text again
    assert "replaced" in _convert_region(qtbot, window, body)
    view.revert_button.click()
    assert doc.page_markdown(1) == model and not view.edited_mark.isVisibleTo(window)
    assert not undo.isEnabled()  # the page no longer reads as the region's conversion left it

    # quitting stops a reading under way at its next pass, and nothing changes
    again = window.page_edits.region_again
    window.inspection.select(body)
    with qtbot.waitSignal(again.done, timeout=PATIENCE_MS) as said:
        with window.conversion.engines.lock:  # the reading waits for the model, as behind a conversion
            action.trigger()
            assert not again.stop(wait_ms=0)
    assert said.args[0].endswith("was not converted again: cancelled") and doc.page_markdown(1) == model

    # while a document converts, the model is busy: disabled, and the tooltip says why
    other = make_pdf(tmp_path / "other.pdf")
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [other])
        window.show_document(doc)
        window.inspection.select(body)
        window.page_edits.region_again.update_action()
        assert window.conversion.busy and not action.isEnabled()
        assert "converts: the model is busy" in action.toolTip()
        assert not window.page_edits.region_again.convert_region_again(body)
    window.page_edits.region_again.update_action()
    assert action.isEnabled()


def test_a_figure_region_cannot_be_converted_again(qtbot, window, tmp_path):
    from core.drafters.base import Region

    pdf = make_pdf(tmp_path / "one.pdf")
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        drop_files(window, [pdf])
    result = window.current.pages[1].result
    result.regions.append(Region("figure", (10, 300, 200, 400), "", "textlayer"))
    assert "is a figure" in window.page_edits.region_again.why_not(len(result.regions) - 1)
