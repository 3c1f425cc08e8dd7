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
