"""What a look at the app under a real display found: settings that tell one story, text that
fits, words that say a thing once."""

from __future__ import annotations


def test_the_apps_scan_layout_is_cores_and_the_summary_agrees_with_the_dialog(qtbot):
    from app.settings import ConversionSettings, SettingsDialog
    from core.drafters import DEFAULT_SCAN_LAYOUT

    assert ConversionSettings().scan_layout == DEFAULT_SCAN_LAYOUT
    assert ConversionSettings().engine_config().drafter == ConversionSettings(drafter="auto").engine_config().drafter
    text_layer = ConversionSettings(drafter="textlayer")
    assert "layout" not in text_layer.summary(), "the text layer reads no layout: the summary names none"
    for layout in ("pymupdf", "cdla"):
        ocr = ConversionSettings(drafter="rapidocr", scan_layout=layout)
        dialog = SettingsDialog(ocr)
        qtbot.addWidget(dialog)
        assert f"({dialog.scan_layout.currentText()} layout)" in ocr.summary()
    dialog = SettingsDialog(ConversionSettings(drafter="auto", scan_layout="unknown"))
    qtbot.addWidget(dialog)
    assert dialog.scan_layout.currentText() == DEFAULT_SCAN_LAYOUT


def test_a_missing_model_folder_is_named_once(qtbot, tmp_path):
    from app.settings import ConversionSettings, SettingsDialog

    dialog = SettingsDialog(ConversionSettings())
    qtbot.addWidget(dialog)
    missing = str(tmp_path / "no-such-model")
    dialog.model.setText(missing)
    assert dialog.model_check.text().count(missing) == 1, dialog.model_check.text()


def test_a_long_document_name_gives_way_in_the_status_bar_to_what_happened(qtbot, window, tmp_path):
    """At 1280 pixels the page being converted stays readable after a long file name."""
    window.resize(1280, 800)
    name = "docling_code_and_formula_with_a_rather_long_file_name_2024.pdf"
    window.set_status(f"{name}: converting page 3 (3 of 9)")
    window.progress_label.setText("page 3: 1,234 chars · 12.5 tokens/s · 1 min 02 s · about 3 min 10 s left")
    window.progress_label.setVisible(True)
    qtbot.wait(50)
    from PySide6.QtWidgets import QLabel

    label = window.status_label
    on_screen = QLabel.text(label)  # what is on screen (``label.text()`` is the whole message)
    assert on_screen.endswith("converting page 3 (3 of 9)"), on_screen
    assert on_screen.startswith("docling_") and "2024.pdf: " in on_screen and "…" in on_screen
    assert name in label.toolTip()
    assert label.fontMetrics().horizontalAdvance(on_screen) <= label.contentsRect().width()


def test_no_entry_of_the_page_frame_legend_breaks_across_lines():
    from app.thumbnails import LEGEND, legend_html

    html = legend_html()
    for _state, words in LEGEND:
        assert words.replace(" ", "&nbsp;") in html, words
    assert "converted:&nbsp;as&nbsp;the&nbsp;regions" in html


def dark_palette():
    from PySide6.QtGui import QColor, QPalette

    dark = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, "#2b2b2b"), (QPalette.ColorRole.WindowText, "#e8e8e8"),
                         (QPalette.ColorRole.Base, "#1e1e1e"), (QPalette.ColorRole.Text, "#e8e8e8"),
                         (QPalette.ColorRole.PlaceholderText, "#9a9a9a")):
        dark.setColor(role, QColor(colour))
    return dark


def test_a_dark_palette_reaches_the_thumbnails_the_page_backdrop_and_the_warnings(qtbot, tmp_path):
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QWidget

    from app.document_state import DocumentState
    from app.page_view import PageView
    from app.thumbnails import PageList
    from app.widgets import error_color
    from core.api import open_document
    from tests.app.conftest import make_pdf
    from tests.app.test_experience import _contrast

    pages = PageList()
    qtbot.addWidget(pages)
    pages.setPalette(dark_palette())
    pdf = make_pdf(tmp_path / "d.pdf", pages=2)
    doc = DocumentState(path=pdf, page_count=2, doc=open_document(pdf), status="open")
    pages.resize(200, 400)
    pages.show()
    pages.show_document(doc)
    pages.setCurrentRow(0)
    qtbot.wait(50)
    rect = pages.visualItemRect(pages.item(0))
    selected = QColor(pages.viewport().grab().toImage().pixel(rect.left() + 3, rect.bottom() - 3))
    assert selected.lightness() < 128, f"a light selection on a dark list: {selected.name()}"
    doc.doc.close()

    view = PageView()
    qtbot.addWidget(view)
    view.setPalette(dark_palette())
    assert view.backgroundBrush().color().lightness() < 128, "a light backdrop around the page in a dark theme"
    view.show_message("Drop PDFs here")
    assert _contrast(view._placeholder.brush().color(), view.backgroundBrush().color()) >= 3

    dark, light = QWidget(), QWidget()
    qtbot.addWidget(dark)
    qtbot.addWidget(light)
    dark.setPalette(dark_palette())
    assert _contrast(QColor(error_color(dark)), QColor("#2b2b2b")) >= 4.5
    assert _contrast(QColor(error_color(light)), light.palette().window().color()) >= 4.5
