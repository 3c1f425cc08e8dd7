"""What the app says when something goes wrong, seen through its window: file and model names shown
as written (never as HTML), one dialog for several files that cannot be opened, a wrong password
named as such, a page range past a document's end, export errors and an unreachable hub in one line."""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import PATIENCE_MS, make_pdf, open_window

#: A name that Qt would take for HTML: a link and a picture if shown as rich text.
HTML_NAME = "<a href=http:evil>Click here<img src=x.png>"  # no "/": it is a file name


def _plain_everywhere(text: str) -> None:
    """Every label and message box of every window that shows ``text`` shows it as plain text."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QLabel

    seen = 0
    for top in QApplication.topLevelWidgets():
        for label in [top, *top.findChildren(QLabel)] if isinstance(top, QLabel) else top.findChildren(QLabel):
            if text in label.text():
                seen += 1
                assert label.textFormat() == Qt.TextFormat.PlainText, label.text()
    assert seen, f"no label shows {text!r}"


def _visible_boxes(window):
    from PySide6.QtWidgets import QApplication, QMessageBox

    return [w for w in QApplication.topLevelWidgets()
            if isinstance(w, QMessageBox) and w.isVisible() and w.parentWidget() is window]


def test_a_damaged_file_named_like_html_is_named_as_written(qtbot, window, tmp_path):
    from PySide6.QtGui import Qt as GuiQt

    path = tmp_path / f"{HTML_NAME}.pdf"
    path.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 40)
    assert GuiQt.mightBeRichText(path.name)  # as rich text it would be a link and a picture
    assert window.add_files([path]) == []
    box = window.error_box
    assert box is not None and box.isVisible() and HTML_NAME in box.text() + box.windowTitle()
    _plain_everywhere(HTML_NAME)
    assert HTML_NAME in window.status_label.text()


def test_a_model_folder_and_family_named_like_html_are_shown_as_written(qtbot, tmp_path, app_settings):
    from app.settings import SettingsDialog
    from app.welcome import ChooseModelDialog

    folder = tmp_path / HTML_NAME
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "<b>bold</b><img src=y.png>"}), "utf-8")
    win = open_window(qtbot, app_settings)
    assert not win.welcome.chooser.try_model(str(folder))
    assert "<b>bold</b><img src=y.png>" in win.welcome.chooser.result.text()
    chooser_dialog = ChooseModelDialog(tmp_path / "demo", f"{folder} cannot be used.", win)
    qtbot.addWidget(chooser_dialog)
    chooser_dialog.show()
    conversion = app_settings.conversion()
    conversion.model = str(folder)
    dialog = SettingsDialog(conversion, win)
    qtbot.addWidget(dialog)
    dialog.show()
    assert "<b>bold</b>" in dialog.model_check.text()
    _plain_everywhere(HTML_NAME)
    _plain_everywhere("<img src=y.png>")


def test_several_bad_files_give_one_dialog_in_the_order_given(qtbot, window, tmp_path):
    names = ["first.pdf", "second.pdf", "third.pdf"]
    for name in names:
        (tmp_path / name).write_bytes(b"not a pdf at all")
    good = make_pdf(tmp_path / "good.pdf")
    window.conversion.queue_paused = True  # opened, not converted: this test is about opening
    added = window.add_files([tmp_path / names[0], good, tmp_path / names[1], tmp_path / "missing.pdf",
                              tmp_path / names[2]], convert=False)
    assert [d.path.name for d in added] == ["good.pdf"]
    boxes = _visible_boxes(window)
    assert len(boxes) == 1, [b.text() for b in boxes]
    text = boxes[0].text()
    assert "4 files" in boxes[0].windowTitle()
    where = [text.index(n) for n in [*names[:2], "missing.pdf", names[2]]]
    assert where == sorted(where), text
    assert "\n" not in window.status_label.text()


def test_a_wrong_password_is_said_and_cancel_gives_up(qtbot, window, tmp_path):
    """The real password dialog: the second time it says the password was wrong."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QInputDialog

    from tests.reliability import hostile as h

    pdf = h.encrypted_pdf(tmp_path / "locked.pdf", password="s3cret")
    asked, answers = [], iter(["wrong", None])

    def answer():
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QInputDialog):
            QTimer.singleShot(20, answer)
            return
        asked.append(dialog.labelText())
        reply = next(answers)
        if reply is None:
            dialog.reject()
        else:
            QTimer.singleShot(20, answer)  # the next dialog
            dialog.setTextValue(reply)
            dialog.accept()

    QTimer.singleShot(0, answer)
    assert window.add_files([pdf], convert=False) == []
    assert len(asked) == 2, asked
    assert "locked.pdf is encrypted" in asked[0] and "wrong" not in asked[0].lower()
    assert asked[1].startswith("Wrong password for locked.pdf"), asked
    assert window.documents == [] and not _visible_boxes(window)

    answers = iter(["wrong", "s3cret"])
    asked.clear()
    QTimer.singleShot(0, answer)
    added = window.add_files([pdf], convert=False)
    assert [d.password for d in added] == ["s3cret"] and len(asked) == 2


@pytest.mark.slow
def test_a_page_range_past_a_documents_end_converts_what_it_holds(qtbot, window, tmp_path):
    """"2-3" in Settings, then a one-page scan and a two-page PDF: neither fails."""
    settings = window.app_settings.conversion()
    settings.pages = "2-3"
    window.app_settings.set_conversion(settings)
    one = make_pdf(tmp_path / "one.pdf", pages=1)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.add_files([one])
    doc = window.documents[0]
    assert finished.args == ["done"] and doc.status == "done" and doc.error is None, doc.error
    assert sorted(doc.results) == [1] and not _visible_boxes(window)
    assert any("none of them in the page range 2-3" in n for n in doc.notices), doc.notices

    two = make_pdf(tmp_path / "two.pdf", pages=2)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.add_files([two])
    doc = window.documents[1]
    assert finished.args == ["done"] and doc.status == "done", doc.error
    assert sorted(doc.results) == [2]
    assert any("page 2 is converted" in n for n in doc.notices), doc.notices
    assert window.app_settings.conversion().pages == "2-3"  # the setting itself stays as the user set it

    # export errors name the user's target and the reason, never a temporary name or an errno
    blocker = tmp_path / "cut.pdf"
    blocker.write_bytes(b"mine")
    for export, name in ((window.exports.markdown_to, "x.md"), (window.exports.json_to, "x.json")):
        assert export(blocker / name) is None
        message = window.last_error
        assert message == f"Cannot write {blocker / name}: {blocker} is a file, not a folder", message
        assert ".hsd" not in message and "Errno" not in message
        assert window.error_box.text() == message
    assert blocker.read_bytes() == b"mine"


@pytest.mark.slow
def test_a_hub_model_neither_cached_nor_reachable_fails_in_one_line(qtbot, window, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing answers there
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    settings = window.app_settings.conversion()
    settings.model = "nobody-here/no-such-model"
    window.app_settings.set_conversion(settings)
    window.app_settings.set_used_anyway(settings.model)  # past the app's own download offer
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.add_files([make_pdf(tmp_path / "doc.pdf")])
    assert finished.args == ["failed"]
    message = window.last_error
    assert "\n" not in message and "nobody-here/no-such-model" in message, message
    assert "cannot be reached" in message and "Settings > Model" in message, message
    assert "OSError" not in message and "Retry" not in message


def test_questions_that_name_a_document_or_files_show_them_as_written(qtbot, window, tmp_path, monkeypatch):
    """Quitting mid-conversion and replacing files ask with the names in the question."""
    from types import SimpleNamespace

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    from app.main_window import MainWindow

    seen = []

    def answer_no():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer_no)
            return
        seen.append((box.text(), box.textFormat()))
        box.button(QMessageBox.StandardButton.No).click()

    monkeypatch.setattr(window.conversion, "running", SimpleNamespace(name=f"{HTML_NAME}.pdf", results={}))
    QTimer.singleShot(0, answer_no)
    assert MainWindow.confirm_quit(window) is False  # the class's own question, not the fixture's stand-in
    QTimer.singleShot(0, answer_no)
    assert window.exports.ask_overwrite([tmp_path / f"{HTML_NAME}.md"]) is False
    assert len(seen) == 2
    for text, text_format in seen:
        assert HTML_NAME in text and text_format == Qt.TextFormat.PlainText


def test_the_recent_files_menu_shows_an_ampersand_in_a_name(qtbot, window, tmp_path):
    pdf = make_pdf(tmp_path / "R&D notes.pdf")
    window.add_files([pdf], convert=False)
    window._fill_recent_menu()
    shown = [a.text().replace("&&", "&") for a in window.recent_menu.actions() if a.text()]
    assert str(pdf) in shown, shown
    assert any("&&" in a.text() for a in window.recent_menu.actions())


def test_several_bad_files_on_the_command_line_are_named_in_order(tmp_path):
    """``hsd-studio --exit-when-done`` with files that cannot be opened: one line each, in order."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "b.pdf").write_bytes(b"junk")
    (tmp_path / "a.pdf").write_bytes(b"more junk")
    repo = str(Path(__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": repo, "QT_QPA_PLATFORM": "offscreen", "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run([sys.executable, "-m", "app.main", "--settings", str(tmp_path / "s.ini"), "--exit-when-done",
                           str(tmp_path / "b.pdf"), str(tmp_path / "a.pdf"), str(tmp_path / "gone.pdf")],
                          capture_output=True, env=env, timeout=300, cwd=repo)
    err = proc.stderr.decode()
    lines = [ln for ln in err.splitlines() if ln.startswith("hsd-studio:")]
    assert proc.returncode == 1, err
    assert [ln.split(":")[1].strip() for ln in lines] == ["b.pdf", "a.pdf", "gone.pdf"], err
    assert "Traceback" not in err


def test_a_document_named_like_html_has_a_tooltip_that_shows_its_name(qtbot, window, tmp_path):
    pdf = make_pdf(tmp_path / f"{HTML_NAME}.pdf")
    window.conversion.queue_paused = True
    assert len(window.add_files([pdf], convert=False)) == 1
    tip = window.queue.item(0).toolTip().replace("\xa0", " ")
    assert "<img" not in tip and "&lt;img src=x.png&gt;" in tip, tip  # escaped: Qt shows the letters
    assert window.queue.item(0).text().startswith(pdf.name)
