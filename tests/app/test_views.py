"""The app's parts without a model: colour scale, safe Markdown, draft diff, spans, settings, CLI args."""

from __future__ import annotations

import pytest

from core.drafters.base import Region
from core.results import PageResult, PageStats, RegionStats, TextSpan


def _result(markdown="# Title\n\nHello world, this is text.", regions=None, outputs=None):
    regions = regions or [Region("title", (10, 10, 200, 40), "Title", "test"),
                          Region("text", (10, 50, 300, 120), "Hello wrld, this is txt.", "test")]
    stats = [RegionStats("title", r.bbox, drafted_tokens=4, accepted_tokens=4, forward_passes=2)
             if i == 0 else RegionStats("text", r.bbox, drafted_tokens=10, accepted_tokens=3, forward_passes=5)
             for i, r in enumerate(regions)]
    spans = [TextSpan(0, 0, 7), TextSpan(None, 7, 9), TextSpan(1, 9, len(markdown))]
    return PageResult(page=1, width=400, height=500, markdown=markdown, regions=regions, region_stats=stats,
                      region_outputs=outputs if outputs is not None else ["# Title", "Hello world, this is text."],
                      spans=spans, stats=PageStats(mode="hsd", forward_passes=9, generated_tokens=12,
                                                   stage2_passes=6))


def test_colour_scale_is_continuous_red_amber_green():
    from app.page_view import AMBER, GREEN, GREY, RED, acceptance_color, region_rate

    assert acceptance_color(0.0).getRgb()[:3] == RED
    assert acceptance_color(0.5).getRgb()[:3] == AMBER
    assert acceptance_color(1.0).getRgb()[:3] == GREEN
    assert acceptance_color(None).getRgb()[:3] == GREY
    assert acceptance_color(1.7) == acceptance_color(1.0) and acceptance_color(-1) == acceptance_color(0)
    colours = [acceptance_color(i / 100).getRgb()[:3] for i in range(101)]
    assert all(max(abs(x - y) for x, y in zip(a, b)) <= 5 for a, b in zip(colours, colours[1:])), "a jump"
    greens = [c[1] for c in colours[:51]]
    assert greens == sorted(greens)
    s = RegionStats("text", (0, 0, 1, 1), drafted_tokens=10, accepted_tokens=7)
    assert region_rate(s) == pytest.approx(0.7)
    s_page = RegionStats("text", (0, 0, 1, 1), drafted_tokens=10, page_accepted_tokens=4, verified=False)
    assert region_rate(s_page, "page") == pytest.approx(0.4)
    assert region_rate(s_page, "ar") is None
    assert region_rate(RegionStats("figure", (0, 0, 1, 1), verified=False)) is None


def test_overlay_items_follow_stats_and_clicks(qtbot):
    from PIL import Image

    from app.page_view import PageView, acceptance_color

    view = PageView()
    qtbot.addWidget(view)
    view.resize(500, 600)
    view.show()
    result = _result()
    view.set_page(Image.new("RGB", (200, 250), "white"), result.width, result.height)
    view.set_regions(result.regions, None)
    assert all(item.stats is None for item in view.region_items)  # drafted, not verified yet
    for i, s in enumerate(result.region_stats):
        view.update_region(i, s)
    assert [item.brush().color().rgb() for item in view.region_items] == \
        [acceptance_color(s.acceptance_rate).rgb() for s in result.region_stats]
    assert "accepted tokens: 3" in view.region_items[1].toolTip()
    assert view.page_item.sceneBoundingRect().width() == pytest.approx(400)
    with qtbot.waitSignal(view.region_clicked) as clicked:
        item = view.region_items[1]
        point = view.mapFromScene(item.rect().center())
        qtbot.mouseClick(view.viewport(), __import__("PySide6.QtCore").QtCore.Qt.MouseButton.LeftButton, pos=point)
    assert clicked.args == [1] and view.highlighted == 1
    z = view.zoom
    view.zoom_in()
    assert view.zoom > z
    view.zoom_fit()


def test_markdown_rendering_is_safe_and_readable(qtbot, tmp_path):
    from app.markdown_view import MarkdownView, render_markdown

    html = render_markdown("# T\n\n<script>alert(1)</script><b>x</b> ![r](https://evil.example/x.png) "
                           "[l](javascript:alert(1)) $\\alpha^2 \\leq \\frac{1}{2}$\n\n"
                           "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                           '<table><tr><td colspan="2" onclick="steal()">c<img src="http://x/y.png"></td></tr></table>')
    assert "<script" not in html and "alert(1)</" not in html and "<b>x</b>" in html  # formatting stays
    assert "evil.example" not in html and "javascript:" not in html.replace("[l](javascript:alert(1))", "")
    assert "<table" in html and "<td>1</td>" in html
    assert 'colspan="2"' in html and "onclick" not in html and "http://x" not in html
    assert "α" in html and "≤" in html and "<sup>1</sup>\u2044<sub>2</sub>" in html

    view = MarkdownView()
    qtbot.addWidget(view)
    (tmp_path / "doc_images").mkdir()
    from PySide6.QtGui import QImage

    img = QImage(4, 4, QImage.Format.Format_RGB32)
    img.fill(0)
    img.save(str(tmp_path / "doc_images" / "f.png"))
    view.set_base_dir(tmp_path)
    view.set_texts(page="![Figure 1](doc_images/f.png)\n\n![x](file:///etc/passwd)", document="doc")
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QTextDocument

    kind = QTextDocument.ResourceType.ImageResource.value
    assert view.rendered.loadResource(kind, QUrl("doc_images/f.png")) is not None
    assert view.rendered.loadResource(kind, QUrl("https://example.com/a.png")) is None
    assert view.rendered.loadResource(kind, QUrl("../outside.png")) is None
    assert "https://example.com/a.png" in view.rendered.blocked
    assert view.source.toPlainText().startswith("![Figure 1]")
    view.set_scope("document")
    assert view.source.toPlainText() == "doc" and view.current_text() == "doc"


def test_region_markdown_links(qtbot):
    from app.markdown_view import MarkdownView, map_spans

    result = _result()
    spans = map_spans(result, result.markdown)
    assert spans == [(0, 0, 7), (1, 9, len(result.markdown))]
    shifted = map_spans(result, "![Figure 1](x.png)\n\n" + result.markdown)
    assert shifted[0] == (0, 20, 27)
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_texts(page=result.markdown, document=result.markdown)
    view.show_range(9, len(result.markdown))
    assert view.source.textCursor().selectedText() == "Hello world, this is text."
    assert "Hello world" in view.rendered.textCursor().selectedText()
    with qtbot.waitSignal(view.page_selection) as sel:
        cursor = view.source.textCursor()
        cursor.setPosition(2)
        cursor.setPosition(5, cursor.MoveMode.KeepAnchor)
        view.source.setTextCursor(cursor)
    assert sel.args == [2, 5]


def test_draft_diff_marks_kept_and_rewritten(qtbot):
    from app.draft_inspector import DraftInspector, diff_words, verified_text

    d = diff_words("Hello wrld, this is txt.", "Hello world, this is text.")
    assert d.draft_words == 7 and d.kept_words == 5
    assert ("rewritten", "wrld") in d.draft and ("rewritten", "world") in d.verified
    assert diff_words("a b", "a b c").verified[-1] == ("added", "c")
    result = _result()
    assert verified_text(result, 1)[0] == "Hello world, this is text."
    result.region_outputs = ["", ""]
    assert verified_text(result, 1)[0] == result.markdown[9:]
    from app.document_state import PageRecord
    from app.page_story import region_story

    inspector = DraftInspector()
    qtbot.addWidget(inspector)
    record = PageRecord(1)
    record.finished(_result())
    inspector.show_story(region_story(record, 1, "hsd", running=False))
    assert inspector.region_index == 1
    assert "wrld" in inspector.draft_view.toPlainText()
    assert "71%" in inspector.header.text()  # 5 of 7 draft words kept


def test_settings_persist(qapp, tmp_path):  # it opens the settings dialog: a widget needs the QApplication
    from PySide6.QtCore import QSettings

    from app.settings import AppSettings, ConversionSettings, SettingsDialog, page_spec_ok

    path = str(tmp_path / "s.ini")
    s = AppSettings(QSettings(path, QSettings.Format.IniFormat))
    assert s.conversion() == ConversionSettings()
    s.set_conversion(ConversionSettings(model="/m", device="cpu", drafter="textlayer", mode="page", tau=0.75,
                                        dpi=200, pages="1-3,7", max_new_tokens=512))
    for name in ("a.pdf", "b.pdf", "a.pdf"):
        s.add_recent(str(tmp_path / name))
    again = AppSettings(QSettings(path, QSettings.Format.IniFormat))
    c = again.conversion()
    assert (c.model, c.device, c.drafter, c.mode, c.tau, c.dpi, c.pages, c.max_new_tokens) == \
        ("/m", "cpu", "textlayer", "page", 0.75, 200, "1-3,7", 512)
    assert [p.rsplit("/", 1)[-1] for p in again.recent_files()] == ["a.pdf", "b.pdf"]
    cfg = c.engine_config()
    assert (cfg.model, cfg.device, cfg.mode, cfg.tau, cfg.dpi) == ("/m", "cpu", "page", 0.75, 200)
    assert ConversionSettings(device="auto").engine_config().device is None
    assert ConversionSettings(scan_layout="pymupdf").engine_config().drafter == "auto:layout=pymupdf"
    assert ConversionSettings(drafter="textlayer", scan_layout="pymupdf").engine_config().drafter == "textlayer"
    assert "auto (cdla layout)" in ConversionSettings(scan_layout="cdla").summary()  # not the default
    dialog = SettingsDialog(c)
    assert dialog.settings() == c
    assert all(map(page_spec_ok, ["", "all", "1-3,7", "5-", "-2"]))
    assert not any(map(page_spec_ok, ["1 2", "x", ",", "1-2-3"]))


def test_command_line():
    from app.main import parse_args

    args = parse_args(["a.pdf", "b.png", "--model", "/m"])
    assert args.files == ["a.pdf", "b.png"] and args.model == "/m" and not args.no_convert
    assert parse_args([]).files == []


def test_window_links_regions_and_markdown(qtbot, tmp_path):
    """Clicking a region selects its Markdown; selecting Markdown highlights its region."""
    from PySide6.QtCore import QSettings

    from app.main_window import MainWindow
    from app.settings import AppSettings
    from tests.app.conftest import make_pdf

    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    settings.set_cache_dir(tmp_path / "cache")
    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.show()
    pdf = make_pdf(tmp_path / "two.pdf", pages=2)
    (doc,) = win.add_files([pdf], convert=False)
    assert win.conversion.worker is None and doc.status == "open" and win.thumbs.count() == 2
    assert win.app_settings.recent_files()[0].endswith("two.pdf")
    doc.pages[1].finished(_result())
    win.show_page(1)
    assert len(win.page_view.region_items) == 2
    assert win.markdown_view.page_text() == "# Title\n\nHello world, this is text."
    win.inspection.select(1)
    assert win.markdown_view.source.textCursor().selectedText() == "Hello world, this is text."
    assert win.inspector.region_index == 1 and win.page_view.highlighted == 1
    cursor = win.markdown_view.source.textCursor()
    cursor.setPosition(2)
    cursor.setPosition(4, cursor.MoveMode.KeepAnchor)
    win.markdown_view.source.setTextCursor(cursor)
    assert win.page_view.highlighted == 0 and win.inspector.region_index == 0
    win.step_page(1)
    assert win.current_page == 2
    assert win.page_view.region_items == [] and win.markdown_view.page_text() == ""

    # files dropped on any part of the window reach it (children pass drops up)
    from tests.app.conftest import drop_files

    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n broken")
    for target in (win.page_view.viewport(), win.markdown_view.rendered.viewport(), win.thumbs.viewport()):
        win.last_error = None
        drop_files(target, [bad])
        assert win.last_error, f"a drop on {type(target).__name__} was lost"
        win.error_box.close()
    win.remove_current()
    assert win.documents == [] and win.current is None and win.thumbs.count() == 0


def test_zooming_in_renders_sharper(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from app.main_window import MainWindow
    from app.settings import AppSettings
    from tests.app.conftest import PATIENCE_MS, make_pdf

    win = MainWindow(AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)))
    qtbot.addWidget(win)
    win.show()
    win.add_files([make_pdf(tmp_path / "z.pdf")], convert=False)
    before = win.page_view.image_width
    for _ in range(6):
        win.page_view.zoom_in()
    qtbot.waitUntil(lambda: win.page_view.image_width > before * 1.5, timeout=PATIENCE_MS)
    assert win.page_view.sceneRect().width() == 360  # still in points


def test_encrypted_pdf_asks_for_the_password(qtbot, tmp_path, monkeypatch):
    import pymupdf
    from PySide6.QtCore import QSettings

    from app.main_window import MainWindow
    from app.settings import AppSettings
    from tests.app.conftest import make_pdf

    plain = make_pdf(tmp_path / "plain.pdf")
    locked = tmp_path / "locked.pdf"
    with pymupdf.open(str(plain)) as d:
        d.save(str(locked), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
    win = MainWindow(AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)))
    qtbot.addWidget(win)
    answers = iter(["wrong", "pw"])
    monkeypatch.setattr(win, "ask_password", lambda path, message: next(answers))
    (doc,) = win.add_files([locked], convert=False)
    assert doc.password == "pw" and doc.page_count == 1
    monkeypatch.setattr(win, "ask_password", lambda path, message: None)
    assert win.add_files([locked], convert=False) == [] and len(win.documents) == 1
