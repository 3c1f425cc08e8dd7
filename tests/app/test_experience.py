"""The app as a person meets it: first run, model checks, progress, thumbnails, layout memory,
settings, an overlay and inspector that tell the truth, navigation, and a legend readable in dark."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.app.conftest import PATIENCE_MS, make_pdf, open_window as _window, streaming


# -- first run ------------------------------------------------------------------------------------


def test_model_folder_validation_names_what_is_missing(tmp_path, tiny_model):
    from app.model_check import check_model, check_model_folder

    good = check_model_folder(tiny_model)
    assert good.ok and good.family == "hunyuan_vl", good.problems
    empty = tmp_path / "empty"
    empty.mkdir()
    problems = check_model_folder(empty).text()
    assert "config.json" in problems and "safetensors" in problems and "tokenizer" in problems
    other = tmp_path / "other"
    shutil.copytree(tiny_model, other)
    (other / "config.json").write_text(json.dumps({"model_type": "bert"}), "utf-8")
    assert "'bert' is not supported" in check_model_folder(other).text()
    no_tok = tmp_path / "no-tok"
    shutil.copytree(tiny_model, no_tok)
    (no_tok / "tokenizer.json").unlink()
    for extra in ("vocab.json", "tokenizer.model"):
        (no_tok / extra).unlink(missing_ok=True)
    assert check_model_folder(no_tok).problems == ["no tokenizer (tokenizer.json or vocabulary files)"]
    assert "neither a folder nor a hub id" in check_model("not a model").text()


def test_first_run_shows_the_welcome_panel_and_validates_on_the_spot(qtbot, blank_settings, tmp_path, tiny_model):
    win = _window(qtbot, blank_settings)
    assert win.page_stack.currentWidget() is win.welcome
    bad = tmp_path / "bad"
    bad.mkdir()
    assert not win.welcome.chooser.try_model(str(bad))
    assert "no config.json" in win.welcome.chooser.result.text()
    assert blank_settings.conversion().model == ""
    def offline(hub_id, progress):  # no hub here: what huggingface_hub raises without a connection
        raise OSError("Dry run cannot be performed as the repository cannot be accessed.")

    win.models.download = offline
    win.welcome.chooser.hub.setText("someone/not-downloaded")
    win.welcome.chooser._use_hub()
    assert "not on this computer yet" in win.welcome.chooser.result.text()
    qtbot.waitUntil(lambda: win.models.dialog.state == "failed", timeout=PATIENCE_MS)
    assert "hf download someone/not-downloaded" in win.models.dialog.numbers.text()
    assert blank_settings.conversion().model == ""
    assert win.welcome.chooser.try_model(tiny_model)
    assert blank_settings.conversion().model == tiny_model
    assert win.page_stack.currentWidget() is win.page_view


def test_demo_model_is_built_in_one_click(qtbot, blank_settings, monkeypatch, tmp_path, tiny_model):
    from app import welcome

    built = []

    def fake_build(folder, arch, seed=0):  # the real build is covered by core's tests; copy one
        built.append(arch)
        shutil.copytree(tiny_model, folder)
        return folder

    monkeypatch.setattr("core.targets.tiny.build_tiny_model", fake_build)
    win = _window(qtbot, blank_settings)
    with qtbot.waitSignal(win.welcome.chooser.model_chosen, timeout=PATIENCE_MS) as chosen:
        win.demo_action.trigger()  # Help > Build the tiny demo model (the panel's button does the same)
        assert win.welcome.chooser.building and not win.welcome.chooser.demo_button.isEnabled()
    assert built == [welcome.DEMO_ARCH] and not win.welcome.chooser.building
    assert blank_settings.conversion().model == chosen.args[0] == str(win.welcome.chooser.demo_folder)
    assert win.page_stack.currentWidget() is win.page_view


def test_opening_a_pdf_without_a_model_shows_its_drafts_at_once(qtbot, blank_settings, tmp_path):
    win = _window(qtbot, blank_settings)
    win.add_files([make_pdf(tmp_path / "a.pdf", pages=2)])
    assert win.conversion.worker is None and win.current.status == "open"  # nothing converts without a model
    assert "Convert (Ctrl+R) leads to choosing one" in win.status_label.text()
    qtbot.waitUntil(lambda: len(win.page_view.region_items) > 0, timeout=PATIENCE_MS)
    assert all(item.rate is None for item in win.page_view.region_items)
    win.inspection.select(0)
    assert win.inspector.state == "unverified"
    assert "not converted yet" in win.inspector.header.text()
    assert "line-through" not in win.inspector.draft_view.toHtml()


def test_model_errors_point_to_the_apps_controls():
    from app.model_check import app_message
    from core.targets.loader import _not_found

    text = app_message(str(_not_found("/x/model", FileNotFoundError("no such folder: /x/model"))))
    assert "Settings > Model > Folder…" in text and "hsd tiny-model" not in text and "`" not in text
    assert text.endswith(".") and text.startswith("Could not load model '/x/model'")


# -- progress and thumbnails ----------------------------------------------------------------------


def test_progress_bar_and_label_while_converting(qtbot, window, sample_pdf):
    window.add_files([sample_pdf])
    qtbot.waitUntil(lambda: "tokens/s" in window.progress_label.text(), timeout=PATIENCE_MS)
    assert window.progress_label.isVisible() and "tokens/s" in window.progress_label.text()
    assert window.progress.format().endswith("pages")
    # the bar's text fits the bar
    fm = window.progress.fontMetrics()
    assert fm.horizontalAdvance(window.progress.format()) < window.progress.width()
    qtbot.waitUntil(lambda: window.conversion.worker is None, timeout=PATIENCE_MS)
    assert not window.progress_label.isVisible()


def test_thumbnail_states_and_token_limit_warning(qtbot):
    from pathlib import Path
    from types import SimpleNamespace

    from PySide6.QtGui import QColor, QPixmap

    from app.document_state import DocumentState
    from app.page_story import page_acceptance, page_state
    from app.page_view import acceptance_color
    from app.stats_panel import page_row
    from app.thumbnails import thumbnail_icon

    def stats(stop="eos"):
        return SimpleNamespace(stop_reason=stop, generated_tokens=10, forward_passes=4, draft_error=None,
                               mean_accepted_length=2.5, seconds={"total": 1.0}, mode="hsd")

    def result(page, stop="eos", error=None, region_stats=()):
        return SimpleNamespace(page=page, error=error, stats=None if error else stats(stop), regions=[],
                               region_stats=list(region_stats))

    region = SimpleNamespace(verified=True, drafted_tokens=10, accepted_tokens=8, acceptance_rate=0.8)
    doc = DocumentState(Path("x.pdf"), 5, status="converting")
    done, cut, bad = result(1, region_stats=[region]), result(2, "max_new_tokens"), result(3, error="boom")
    for r in (done, cut, bad):
        doc.pages[r.page].finished(r)
    doc.pages[4].started()
    assert [page_state(doc, p) for p in (1, 2, 3, 4, 5)] == ["done", "warning", "failed", "converting", "queued"]
    doc.status = "cancelled"
    doc.pages[4].text = "# so far"
    doc.pages[4].interrupted()
    assert page_state(doc, 4) == "partial" and page_state(doc, 5) == "open"
    assert page_acceptance(done) == pytest.approx(0.8)
    base = QPixmap(100, 130)
    base.fill(QColor(255, 255, 255))
    icon = thumbnail_icon(base, "done", acceptance_color(0.8)).pixmap(100, 130).toImage()
    assert QColor(icon.pixel(1, 60)).rgb() == acceptance_color(0.8).rgb()
    assert "token limit" in page_row(cut)[-1] and not page_row(cut)[-1].startswith("ok")
    assert page_row(done)[-1] == "ok"


def test_converted_thumbnails_carry_state_and_acceptance(qtbot, window, sample_pdf):
    from PySide6.QtCore import Qt

    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.add_files([sample_pdf])
    item = window.thumbs.item(0)
    assert item.data(Qt.ItemDataRole.UserRole) in ("done", "warning")
    assert "draft accepted" in item.toolTip()


# -- window and layout ----------------------------------------------------------------------------


def test_first_size_fits_small_and_hidpi_screens():
    from PySide6.QtCore import QSize

    from app.window_state import first_size

    for available in (QSize(1280, 800), QSize(1280, 770), QSize(960, 540)):  # 1920x1080 at scale 2 is 960x540
        size = first_size(available)
        assert size.width() <= available.width() and size.height() <= available.height(), available
    assert first_size(QSize(2560, 1440)) == QSize(1400, 860)


def test_geometry_splitters_and_last_folder_are_remembered(qtbot, app_settings, tmp_path):
    from PySide6.QtCore import QSettings

    from app.settings import AppSettings

    win = _window(qtbot, app_settings)
    # the window can shrink to 1920x1080 at scale 2 (960x540 logical pixels)
    assert win.minimumSizeHint().width() <= 960 and win.minimumSizeHint().height() <= 540
    win.resize(700, 560)  # the offscreen screen is 800x800
    win.main_splitter.setSizes([120, 330, 240])
    sizes = win.main_splitter.sizes()
    pdf = make_pdf(tmp_path / "docs" / "x.pdf") if (tmp_path / "docs").mkdir() is None else None
    from app import window_state

    window_state.set_last_folder(app_settings.q, str(pdf.parent))
    win.close()
    again = _window(qtbot, AppSettings(QSettings(app_settings.q.fileName(), QSettings.Format.IniFormat)))
    assert (again.size().width(), again.size().height()) == (700, 560)
    assert again.main_splitter.sizes() == sizes
    assert again.dialog_folder() == str(pdf.parent)


# -- settings -------------------------------------------------------------------------------------


def test_settings_dialog_explains_and_lists_only_what_is_here(qtbot, monkeypatch):
    from app import settings as settings_module
    from app.settings import ConversionSettings, SettingsDialog

    monkeypatch.setattr(settings_module, "present_devices", lambda: ["auto", "cpu"])
    dialog = SettingsDialog(ConversionSettings(model="", drafter="textlayer", mode="hsd"))
    qtbot.addWidget(dialog)
    assert not dialog.device.isEditable()
    assert [dialog.device.itemText(i) for i in range(dialog.device.count())] == ["auto", "cpu"]
    assert dialog.model.minimumWidth() >= 400 and dialog.browse.text() == "Folder…"
    assert "text layer" in dialog.drafter_help.text().lower()
    assert "exactly" in dialog.mode_help.text()
    dialog.mode.setCurrentText("ar")
    assert "Plain decoding" in dialog.mode_help.text()
    paddle = dialog.drafter.findText("paddle")
    if dialog.unavailable["paddle"]:
        assert not dialog.drafter.model().item(paddle).isEnabled()
        assert "paddle" in dialog.drafter_help.text()
    dialog.model.setText("/no/such/folder")
    assert "✗" in dialog.model_check.text()
    assert not dialog.scan_layout.isEnabled()  # the text layer reads no layout
    dialog.drafter.setCurrentText("auto")
    dialog.scan_layout.setCurrentText("pymupdf")
    assert dialog.scan_layout.isEnabled() and "PyMuPDF" in dialog.scan_layout.toolTip()
    assert dialog.settings().engine_config().drafter == "auto:layout=pymupdf"


# -- overlay and inspector ------------------------------------------------------------------------


def test_inspector_states_never_strike_unverified_and_never_go_stale(qtbot, window, sample_pdf):
    from core.results import RegionStats

    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.add_files([sample_pdf])
    result = window.inspection.record.result
    window.inspection.select(0)
    assert window.inspector.state in ("verified", "unverified") and window.inspector.page == 1
    # a region nothing verified: shown plain, the reason given
    index = 0
    result.region_stats[index] = RegionStats(label="text", bbox=(0, 0, 1, 1), drafted_tokens=0, verified=False)
    window.inspection.select(index)
    assert window.inspector.state == "unverified"
    assert "line-through" not in window.inspector.draft_view.toHtml()
    assert "not verified" in window.inspector.header.text()
    # a page change clears it
    window.show_page(1)
    assert window.inspector.state == "empty" and window.inspector.region_index is None


def test_overlay_and_label_toggles(qtbot, window, sample_pdf):
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.add_files([sample_pdf])
    view = window.page_view
    assert view.region_items and all(i.isVisible() for i in view.region_items)
    assert not any(i.isVisible() for i in view.label_items)
    window.labels_action.trigger()
    assert all(i.isVisible() for i in view.label_items)
    window.overlay_action.trigger()
    assert not any(i.isVisible() for i in view.region_items + view.label_items)
    window.show_page(1)  # a redraw keeps the choice
    assert not any(i.isVisible() for i in view.region_items)


def _contrast(a, b) -> float:
    def lum(c):
        def ch(v):
            v /= 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.red()) + 0.7152 * ch(c.green()) + 0.0722 * ch(c.blue())
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_legend_is_readable_in_a_dark_palette(qtbot):
    from PySide6.QtGui import QColor, QPalette

    from app.draft_inspector import ACCEPTED_BG, ADDED_BG, MARK_TEXT, REWRITTEN_BG, DraftInspector
    from app.page_view import Legend

    dark = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, "#202124"), (QPalette.ColorRole.WindowText, "#e8eaed"),
                         (QPalette.ColorRole.Base, "#181818"), (QPalette.ColorRole.Text, "#e8eaed")):
        dark.setColor(role, QColor(colour))
    legend = Legend()
    legend.setPalette(dark)
    qtbot.addWidget(legend)
    legend.show()
    image = legend.grab().toImage()
    background = QColor(image.pixel(1, 1))
    for label in legend.labels:
        text = label.palette().color(label.foregroundRole())
        assert _contrast(text, background) >= 4.5, label.text()
    assert "figure" in legend.labels[3].toolTip()
    inspector = DraftInspector()
    inspector.setPalette(dark)
    qtbot.addWidget(inspector)
    for bg in (ACCEPTED_BG, REWRITTEN_BG, ADDED_BG):
        assert _contrast(QColor(MARK_TEXT), QColor(bg)) >= 4.5
        assert f"background:{bg}; color:{MARK_TEXT}" in inspector.legend.text()


# -- navigation -----------------------------------------------------------------------------------


def test_go_to_page_fit_width_zoom_percent_and_reset(qtbot, window, tmp_path):
    window.add_files([make_pdf(tmp_path / "three.pdf", pages=3)], convert=False)
    window.go_to_page(3)
    assert window.current_page == 3 and window.thumbs.currentRow() == 2
    view = window.page_view
    window.fit_width_action.trigger()
    shown = view.mapFromScene(view.sceneRect()).boundingRect().width()
    assert abs(shown - view.viewport().width()) < 40
    assert window.zoom_label.text().endswith("%")
    view.zoom_fit()
    view.zoom_by(2.0)
    centre = view.mapToScene(view.viewport().rect().center())
    view.zoom_by(1.25)
    after = view.mapToScene(view.viewport().rect().center())
    assert abs(after.x() - centre.x()) < 3 and abs(after.y() - centre.y()) < 3
    zoomed = view.zoom
    window.add_files([make_pdf(tmp_path / "other.pdf")], convert=False)
    assert view.zoom != zoomed  # a new document starts fitted


def test_help_shortcuts_and_about(qtbot, window):
    window.show_shortcuts()
    text = window.help_dialog.label.text()
    assert "Go to page" in text and "Ctrl+G" in text and "PgDown" in text
    window.show_about()
    about = window.help_dialog.label.text()
    assert "AGPL-3.0-or-later" in about and "PySide6" in about and "torch" in about
    assert window.app_settings.conversion().model in about


# -- cancel keeps what it can ---------------------------------------------------------------------


def test_cancel_keeps_the_cancelled_pages_drafts_marked_partial(qtbot, window, app_settings, tmp_path):
    conversion = app_settings.conversion()
    conversion.max_new_tokens = 2000
    app_settings.set_conversion(conversion)
    window.add_files([make_pdf(tmp_path / "long.pdf", pages=2)])
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    doc = window.conversion.running
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.conversion.cancel()
    assert finished.args == ["cancelled"]
    partial = [n for n, r in doc.pages.items() if r.phase == "partial"]
    assert partial, "the cancelled page's drafts were dropped"
    page = partial[0]
    regions, text = doc.pages[page].regions, doc.pages[page].text
    assert regions and text
    window.show_page(page)
    assert len(window.page_view.region_items) == len(regions)
    assert "partial" in window.markdown_title.text()
    assert "partial" in window.status_label.text()
    window.inspection.select(0)
    assert window.inspector.state == "unverified" and "partial" in window.inspector.header.text()


def test_inspector_follows_a_region_from_converting_to_finished(qtbot, window, tmp_path):
    """Inspecting a region while its page converts shows its draft as not verified yet; when the page
    finishes, the inspector shows the finished result without another click."""
    window.add_files([make_pdf(tmp_path / "live.pdf")])
    qtbot.waitUntil(lambda: window.conversion.running is not None and window.conversion.running.pages[1].phase
                    in ("drafting", "decoding") and bool(window.conversion.running.pages[1].regions)
                    and bool(window.page_view.region_items), timeout=PATIENCE_MS)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.inspection.select(0)
        assert window.inspector.page == 1 and window.inspector.region_index == 0
        assert window.inspector.state == "unverified"  # the page is not finished: nothing is final yet
        live_header = window.inspector.header.text()
        assert "still converting" in live_header or "the page was not finished" in live_header
    result = window.inspection.record.result
    assert result is not None
    header = window.inspector.header.text()
    assert "still converting" not in header and "the page was not finished" not in header
    assert window.inspector.region_index == 0 and window.inspector.page == 1
    from app.page_view import region_rate

    expected = "verified" if region_rate(result.region_stats[0], "hsd") is not None else "unverified"
    assert window.inspector.state == expected


def test_a_page_that_starts_decoding_where_it_is_shown_keeps_the_region_selected_on_it(qtbot, window, tmp_path):
    """A page drafted while the model loads is shown with its regions; one selected there stays
    selected when its decode starts (the page view follows the decode to the page it already shows)."""
    window.add_files([make_pdf(tmp_path / "kept.pdf")])
    qtbot.waitUntil(lambda: window.conversion.running is None and window.current is not None
                    and bool(window.page_view.region_items), timeout=PATIENCE_MS)
    window.show_page(1)
    window.follow = True
    window.inspection.select(0)
    assert window.inspector.region_index == 0
    window._page_started(window.current, 1)
    assert window.inspector.region_index == 0 and window.inspector.page == 1
