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
