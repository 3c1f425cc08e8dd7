"""The app end to end with a tiny model: drop a PDF, convert, overlay, Markdown = CLI, export, cancel."""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import DPI, MAX_NEW, PATIENCE_MS, drop_files, make_pdf, streaming

pytestmark = pytest.mark.slow


def _cli_markdown(tmp_path, pdf, model, max_new=MAX_NEW):
    from core.cli import main as cli

    out = tmp_path / "cli" / f"{pdf.stem}.md"
    stats = tmp_path / "cli" / "stats.json"
    rc = cli(["convert", str(pdf), "-o", str(out), "--model", model, "--drafter", "textlayer",
              "--mode", "hsd", "--tau", "1.0", "--dpi", str(DPI), "--device", "cpu",
              "--max-new-tokens", str(max_new), "--stats", str(stats), "-q"])
    assert rc == 0
    return out.read_bytes(), json.loads(stats.read_text("utf-8"))


def test_drop_convert_overlay_markdown_export(qtbot, window, sample_pdf, tmp_path, tiny_model, monkeypatch):
    from app.page_view import acceptance_color, region_rate

    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        drop_files(window, [sample_pdf])
    assert finished.args == ["done"]
    doc = window.current
    assert doc is not None and doc.status == "done" and sorted(doc.results) == [1]
    result = doc.results[1]
    assert result.error is None and result.regions, "the textlayer drafter found no regions"

    # overlay: one item per region, coloured by that region's statistics
    items = window.page_view.region_items
    assert len(items) == len(result.regions)
    for item, region, stats in zip(items, result.regions, result.region_stats):
        assert item.region is region
        expected = acceptance_color(region_rate(stats, "hsd"))
        assert item.brush().color().rgb() == expected.rgb()
        assert item.pen().color().rgb() == expected.rgb()
        tip = item.toolTip()
        assert region.label in tip and f"drafted tokens: {stats.drafted_tokens}" in tip
        assert f"forward passes: {stats.forward_passes}" in tip

    # the Markdown pane holds exactly what `hsd convert` writes for the same input and settings
    cli_bytes, cli_stats = _cli_markdown(tmp_path, sample_pdf, tiny_model)
    window.markdown_view.set_scope("document")
    assert window.markdown_view.document_text().encode("utf-8") == cli_bytes
    assert window.markdown_view.source.toPlainText() == cli_bytes.decode("utf-8")
    assert "<script" not in window.markdown_view.rendered.toHtml()

    # statistics panel: one row per page with the engine's numbers
    table = window.stats_panel.table
    assert table.rowCount() == 1
    assert table.item(0, 1).text() == str(result.stats.generated_tokens)
    assert table.item(0, 2).text() == str(result.stats.forward_passes)

    # clicking a region inspects its draft
    window.inspection.select(0)
    assert window.inspector.region_index == 0
    assert window.page_view.highlighted == 0
    assert window.inspector.draft_view.toPlainText().strip()

    # export: byte-identical Markdown, JSON with regions and stats, never overwriting silently
    out_md = tmp_path / "export" / f"{sample_pdf.stem}.md"
    assert window.exports.markdown_to(out_md) == out_md
    assert out_md.read_bytes() == cli_bytes
    assert not (out_md.parent / f".{out_md.name}.hsd").exists()
    out_json = tmp_path / "export" / "stats.json"
    assert window.exports.json_to(out_json) == out_json
    data = json.loads(out_json.read_text("utf-8"))
    assert data["settings"] == cli_stats["settings"]
    assert len(data["pages"][0]["regions"]) == len(result.regions)
    assert data["pages"][0]["regions"][0]["stats"]["drafted_tokens"] == result.region_stats[0].drafted_tokens
    assert data["totals"]["generated_tokens"] == cli_stats["totals"]["generated_tokens"]

    asked = []
    monkeypatch.setattr(window.exports, "ask_overwrite", lambda paths: asked.append(paths) or False)
    out_md.write_text("mine", "utf-8")
    assert window.exports.markdown_to(out_md) is None
    assert out_md.read_text("utf-8") == "mine" and asked and asked[0][0] == out_md
    assert window.exports.json_to(out_json) is None
    monkeypatch.setattr(window.exports, "ask_overwrite", lambda paths: True)
    assert window.exports.markdown_to(out_md) == out_md
    assert out_md.read_bytes() == cli_bytes

    # Copy Markdown copies what the pane shows: the clicked region's page (its Markdown is selected
    # there), then the whole document once the pane shows the document
    from PySide6.QtGui import QGuiApplication

    assert window.markdown_view.scope == "page"
    window.exports.copy_markdown()
    assert QGuiApplication.clipboard().text() == window.current.page_markdown(window.inspection.page)
    window.markdown_view.set_scope("document")
    window.exports.copy_markdown()
    assert QGuiApplication.clipboard().text() == cli_bytes.decode("utf-8")

    # converting the same document again reuses the finished page, like `hsd convert`
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.convert_current()
    assert window.current.markdown_path.read_bytes() == cli_bytes


def test_cancel_stops_within_a_pass(qtbot, window, app_settings, tmp_path):
    conversion = app_settings.conversion()
    conversion.max_new_tokens = 2000
    app_settings.set_conversion(conversion)
    pdf = make_pdf(tmp_path / "long.pdf", pages=3)
    other = make_pdf(tmp_path / "other.pdf")
    drop_files(window, [pdf, other])
    assert [d.status for d in window.documents] == ["converting", "queued"]
    # cancel in the middle of page-level decoding (2000 tokens would take minutes)
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    assert window.conversion.busy and window.cancel_action.isEnabled()
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.conversion.cancel()
    assert finished.args == ["cancelled"]
    assert window.current.status == "cancelled"
    assert window.conversion.worker is None and not window.conversion.busy
    assert len(window.current.results) < 3
    assert "cancelled" in window.status_label.text()
    assert window.documents[1].status == "queued", "cancel pauses the queue"


def test_bad_file_shows_an_error(qtbot, window, tmp_path):
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    text = tmp_path / "notes.txt"
    text.write_text("hello", "utf-8")
    drop_files(window, [bad])
    assert window.error_box is not None and window.error_box.isVisible()
    assert window.last_error and "broken.pdf" in window.status_label.text()
    assert window.documents == [] and window.conversion.worker is None
    window.error_box.close()
    window.add_files([text, tmp_path / "missing.pdf"])
    assert window.documents == [] and window.last_error



def _model_fails_to_load(window, monkeypatch):
    from core.errors import ModelLoadError

    def broken(config):
        raise ModelLoadError("could not load model 'm' (OSError: the disk went away). Pass a local folder ...")

    monkeypatch.setattr(window.conversion.engines, "get", broken)


def test_engine_error_becomes_a_message(qtbot, window, app_settings, sample_pdf, monkeypatch):
    _model_fails_to_load(window, monkeypatch)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        drop_files(window, [sample_pdf])
    assert finished.args == ["failed"]
    assert window.current.status == "failed" and "the disk went away" in window.last_error
    assert window.error_box is not None and window.error_box.isVisible()
    assert window.conversion.worker is None and window.isVisible()
    # a malformed page range is a message too, and the queue goes on afterwards
    window.error_box.close()
    monkeypatch.undo()
    conversion = app_settings.conversion()
    conversion.pages = "9-5"
    app_settings.set_conversion(conversion)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.convert_current()
    assert finished.args == ["failed"] and "page" in window.last_error


def test_a_page_decoded_without_drafts_is_named_in_the_status(qtbot, window, sample_pdf, monkeypatch):
    """A drafter crash costs speed, not the page: the page converts and the status bar says why it
    was slow."""
    from core.drafters.textlayer import TextLayerDrafter

    def broken(self, page):
        raise RuntimeError("no text layer today")

    monkeypatch.setattr(TextLayerDrafter, "draft", broken)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        drop_files(window, [sample_pdf])
    assert finished.args == ["done"]
    assert window.current.results[1].error is None
    assert "page 1 decoded without drafts" in window.status_label.text()


def test_a_core_warning_reaches_the_status_bar(qtbot, window, sample_pdf, monkeypatch):
    """Core's HSDWarnings (a drafter step turned off because its package is missing) are shown, not
    lost on a console the app user never sees."""
    import warnings

    from core.drafters.textlayer import TextLayerDrafter
    from core.errors import HSDWarning

    draft = TextLayerDrafter.draft

    def warning_draft(self, page):
        warnings.warn("drafts without the layout step (test)", HSDWarning, stacklevel=2)
        return draft(self, page)

    monkeypatch.setattr(TextLayerDrafter, "draft", warning_draft)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        drop_files(window, [sample_pdf])
    assert finished.args == ["done"]
    assert window.current.notices == ["drafts without the layout step (test)"]
    assert "warning: drafts without the layout step (test)" in window.status_label.text()


def test_closing_while_converting_stops_the_worker(qtbot, window, app_settings, tmp_path):
    conversion = app_settings.conversion()
    conversion.max_new_tokens = 2000
    app_settings.set_conversion(conversion)
    drop_files(window, [make_pdf(tmp_path / "long.pdf", pages=2)])
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    asked = []
    window.confirm_quit = lambda: asked.append(1) or False  # "No": the window stays and goes on converting
    window.close()
    assert asked and window.isVisible() and window.conversion.worker is not None
    window.confirm_quit = lambda: asked.append(2) or True
    window.close()
    assert asked == [1, 2]
    assert not window.isVisible()
    qtbot.waitUntil(lambda: window.conversion.worker is None, timeout=PATIENCE_MS)
    assert window.conversion.thread is None and window.documents[0].status == "cancelled"


def test_a_failed_reconvert_keeps_the_last_good_result(qtbot, window, sample_pdf, tmp_path, monkeypatch):
    """Converting again with a model that fails to load fails; the finished result stays shown and exportable."""
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        drop_files(window, [sample_pdf])
    assert finished.args == ["done"]
    doc = window.current
    good = dict(doc.results)
    good_markdown = window.markdown_view.document_text()
    _model_fails_to_load(window, monkeypatch)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS) as finished:
        window.convert_current(fresh=True)
    assert finished.args == ["failed"]
    assert doc.results == good and doc.status == "done"
    assert window.export_md_action.isEnabled() and window.export_json_action.isEnabled()
    assert window.markdown_view.document_text() == good_markdown
    assert "previous result is kept" in window.status_label.text()
    out = window.exports.markdown_to(tmp_path / "kept.md")
    assert out is not None and out.read_text("utf-8") == good_markdown
