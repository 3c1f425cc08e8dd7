"""A new user's first hour: the first real model, progress that counts this run's work only, one story
in every pane, honest states, quitting, text that fits, and a page shown while its drafter runs.

Events the conversion cannot produce yet (a page drafting, the model loading, a damaged file) are
fed to the window's controller as synthetic ``core.events`` objects, exactly as a run would send them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.drafters.base import Region
from core.events import (DocumentDone, DocumentPlanned, ModelLoaded, ModelLoading, PageDone, PageDrafting,
                         PageKept, PageStarted, RegionsDrafted, TextAppended)
from core.results import PageResult, PageStats, RegionStats, TextSpan
from tests.app.conftest import PATIENCE_MS, make_pdf, open_window, streaming

ROOT = Path(__file__).resolve().parents[2]


def page_result(page: int, tokens: int = 100, stop: str = "eos", error: str | None = None, regions=None,
                stats=None, spans=None, markdown: str | None = None) -> PageResult:
    regions = regions or [Region("text", (20, 20, 300, 80), f"Text of page {page}.", "textlayer")]
    markdown = markdown if markdown is not None else f"Text of page {page}."
    return PageResult(page=page, width=360, height=460, markdown=markdown, regions=regions,
                      region_stats=stats or [RegionStats(r.label, r.bbox, drafted_tokens=5, accepted_tokens=5)
                                             for r in regions],
                      region_outputs=[""] * len(regions), spans=spans or [TextSpan(0, 0, len(markdown))],
                      stats=PageStats(mode="hsd", forward_passes=10, generated_tokens=tokens, stage2_passes=9,
                                      stop_reason=stop), error=error)


def run_events(window, doc, events) -> None:
    """Feed ``events`` to the window's controller as if ``doc`` were converting."""
    controller = window.conversion
    if controller.running is not doc:
        controller.running = doc
        doc.status = "converting"
        controller.tracker.start(4096)
    for event in events:
        controller._event(event)


def finish(window, status: str = "done") -> None:
    window.conversion.worker = window.conversion.thread = None
    window.conversion._finished(status, "")


def _window(qtbot, settings, engines=None):
    win = open_window(qtbot, settings, engines)
    win.confirm_quit = lambda: True
    win.resize(1200, 760)
    return win


# -- 1. the first model -----------------------------------------------------------------------------


def test_convert_without_a_model_downloads_the_default_one_with_progress_then_converts(
        qtbot, blank_settings, tmp_path, tiny_model, monkeypatch):
    """Convert with no model: the default hub id is offered for download, the dialog shows size,
    speed and time left, and the conversion starts once it is in the cache."""
    from dataclasses import replace

    from app import model_check
    from app.worker import EngineCache
    from core.api import DEFAULT_MODEL, Engine

    cache = tmp_path / "hub" / "snapshot"
    reports = []

    def fake_download(hub_id, progress):  # the hub's files arrive in three parts
        total = 3_000_000
        for done in (0, 1_000_000, 2_000_000, 3_000_000):
            progress(done, total)
            time.sleep(0.05)
        shutil.copytree(tiny_model, cache)
        reports.append(hub_id)
        return cache

    # the engine's model is read from the cache the download filled (here: the tiny model's folder);
    # the engine keeps the hub id as its setting, as it does with a real hub cache
    def engine(config, target=None):
        return Engine(config, target=target or Engine(replace(config, model=str(cache))).target)

    engines = EngineCache(engine)
    win = _window(qtbot, blank_settings, engines)
    conversion = blank_settings.conversion()
    conversion.device, conversion.drafter, conversion.max_new_tokens, conversion.dpi = "cpu", "textlayer", 8, 72
    blank_settings.set_conversion(conversion)
    (doc,) = win.add_files([make_pdf(tmp_path / "a.pdf")])
    assert doc.status == "open" and win.conversion.worker is None  # no usable model: nothing started
    asked = []
    monkeypatch.setattr(win.models, "ask_download", lambda hub_id, default: asked.append((hub_id, default))
                        or "download")
    win.models.download = fake_download
    monkeypatch.setattr(model_check, "cached_hub_folder", lambda hub_id: cache if cache.exists() else None)
    with qtbot.waitSignal(win.document_finished, timeout=PATIENCE_MS) as finished:
        win.convert_current()
        assert asked == [(DEFAULT_MODEL, True)]
        dialog = win.models.dialog
        qtbot.waitUntil(lambda: dialog.total_bytes == 3_000_000 and dialog.done_bytes >= 1_000_000, timeout=PATIENCE_MS)
        text = dialog.numbers.text()
        assert " of 3.0 MB" in text
    assert reports == [DEFAULT_MODEL] and dialog.state == "done"
    assert finished.args == ["done"] and doc.results
    assert doc.settings.model == DEFAULT_MODEL


def test_download_dialog_shows_size_speed_time_left_cancels_and_resumes(qtbot):
    import threading

    from app.model_download import DownloadDialog

    clock = [0.0]
    release = threading.Event()

    def fake_download(hub_id, progress):
        progress(200_000_000, 1_000_000_000)   # 200 MB were in the cache from an interrupted download
        release.wait(PATIENCE_MS / 1000)  # the test moves the clock first, however long that takes
        while True:                              # until cancelled
            progress(300_000_000, 1_000_000_000)
            time.sleep(0.01)

    dialog = DownloadDialog("org/model", fake_download, clock=lambda: clock[0])
    qtbot.addWidget(dialog)
    dialog.start()
    qtbot.waitUntil(lambda: dialog.total_bytes == 1_000_000_000, timeout=PATIENCE_MS)
    clock[0] = 10.0
    release.set()
    qtbot.waitUntil(lambda: dialog.done_bytes == 300_000_000, timeout=PATIENCE_MS)
    dialog._show_progress(300_000_000, 1_000_000_000)
    # speed from this download's bytes only (the 200 MB already there are not "speed")
    assert dialog.numbers.text() == "300.0 MB of 1.0 GB · 10.0 MB/s · about 1 min 10 s left"
    with qtbot.waitSignal(dialog.failed, timeout=PATIENCE_MS):
        dialog.cancel()
    assert dialog.state == "cancelled" and "downloading again resumes" in dialog.numbers.text()
    assert "300.0 MB are kept" in dialog.numbers.text()


def test_offline_the_download_says_in_one_sentence_what_to_do(qtbot):
    from importlib.metadata import entry_points

    from app.model_download import DownloadDialog, download_error

    def offline(hub_id, progress):
        raise OSError("Dry run cannot be performed as the repository cannot be accessed.")

    dialog = DownloadDialog("tencent/HunyuanOCR", offline)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.failed, timeout=PATIENCE_MS) as failed:
        dialog.start()
    message = failed.args[0]
    assert "`hf download tencent/HunyuanOCR`" in message and "\n" not in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence
    assert "huggingface-cli" not in message
    # the command it names is the one the installed huggingface_hub provides
    assert any(e.name == "hf" and e.value.startswith("huggingface_hub") for e in entry_points(group="console_scripts"))
    from huggingface_hub.errors import GatedRepoError

    gated = GatedRepoError.__new__(GatedRepoError)  # as raised for a model behind a licence
    assert "hf auth login" in download_error("org/gated", gated)


def test_download_model_counts_bytes_through_huggingface_hubs_progress_bars(monkeypatch, tmp_path):
    """``download_model`` lists the files (dry run), then fetches each with a ``tqdm_class`` whose
    updates are the byte counts; an exception from the progress report stops the download."""
    import huggingface_hub
    from huggingface_hub.file_download import DryRunFileInfo

    from app import model_download

    files = [DryRunFileInfo("c0ffee", 100, "config.json", "", True, False),
             DryRunFileInfo("c0ffee", 1000, "model.safetensors", "", False, True)]
    fetched = []

    def snapshot_download(repo_id, allow_patterns=None, dry_run=False, local_files_only=False, **kw):
        assert "*.safetensors" in allow_patterns and "*.bin" not in allow_patterns
        return files if dry_run else str(tmp_path)

    def hf_hub_download(repo_id, filename, revision=None, tqdm_class=None):
        with tqdm_class(total=1000, initial=400, desc=filename, unit="B", unit_scale=True) as bar:  # resumed at 400
            for _ in range(6):
                bar.update(100)
        fetched.append((filename, revision))
        return str(tmp_path / filename)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    seen = []
    assert model_download.download_model("org/m", lambda done, total: seen.append((done, total))) == tmp_path
    assert fetched == [("model.safetensors", "c0ffee")]
    assert seen[0] == (100, 1100) and seen[-1] == (1100, 1100)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))

    def stop(done, total):
        if done > 600:
            raise model_download.DownloadCancelled()

    with pytest.raises(model_download.DownloadCancelled):
        model_download.download_model("org/m", stop)


def test_settings_keep_a_flagged_folder_only_with_use_anyway(qtbot, tmp_path):
    from app.settings import ConversionSettings, SettingsDialog

    empty = tmp_path / "empty-model"
    empty.mkdir()
    dialog = SettingsDialog(ConversionSettings(model="", drafter="textlayer"))
    qtbot.addWidget(dialog)
    dialog.model.setText(str(empty))
    dialog._accept()
    assert dialog.result() != dialog.DialogCode.Accepted
    assert "no config.json" in dialog.message.text() and not dialog.use_anyway.isHidden()
    dialog.use_anyway.click()
    assert dialog.result() == dialog.DialogCode.Accepted and dialog.used_anyway == str(empty)
    # a hub id not downloaded yet is no problem: Convert downloads it
    again = SettingsDialog(ConversionSettings(model="org/not-here-yet", drafter="textlayer"))
    qtbot.addWidget(again)
    again._accept()
    assert again.result() == again.DialogCode.Accepted and again.used_anyway == ""


def test_a_model_folder_that_cannot_load_is_named_with_what_it_lacks(tmp_path):
    from app.model_check import app_message

    empty = tmp_path / "empty"
    empty.mkdir()
    raw = (f"could not load model '{empty}' (ValueError: Unrecognized model in {empty}. Should have a "
           "`model_type` key in its config.json.). Pass a local folder that holds the model ...")
    text = app_message(raw, str(empty))
    assert "model_type" not in text and "no config.json" in text and "no *.safetensors weights" in text
    assert "no tokenizer" in text and "Settings > Model > Folder…" in text


def test_convert_with_a_broken_folder_leads_to_choosing_a_model(qtbot, app_settings, tmp_path, engines):
    from app.welcome import ChooseModelDialog

    conversion = app_settings.conversion()
    conversion.model = str(tmp_path / "empty")
    (tmp_path / "empty").mkdir()
    app_settings.set_conversion(conversion)
    win = _window(qtbot, app_settings, engines)
    (doc,) = win.add_files([make_pdf(tmp_path / "a.pdf")])
    win.convert_current()
    assert win.conversion.worker is None and doc.status == "open"
    assert isinstance(win.models.dialog, ChooseModelDialog) and "no config.json" in win.models.dialog.reason.text()


def test_status_messages_stay_one_line_with_the_details_on_click(qtbot, window):
    long = "Converting failed: " + "a very long reason " * 40
    window.set_status(long, details="the whole story")
    label = window.status_label
    assert not label.wordWrap() and label.text() == long
    assert label.height() <= 2 * label.fontMetrics().lineSpacing()
    assert label.elided and long in label.toolTip()
    label.show_details()
    assert label.details_box.isVisible() and "the whole story" in label.details_box.informativeText()
    label.details_box.close()


# -- 2. progress ------------------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_rate_and_time_left_count_only_this_runs_work():
    """Resumed at page 4 of 5: the 3 kept pages (huge token counts) and the model's loading time do
    not make the rate or the time left; a page taking longer than the others raises the estimate."""
    from app.progress import ProgressTracker

    clock = Clock()
    tracker = ProgressTracker(clock=clock, max_new_tokens=4096)
    tracker.planned((1, 2, 3, 4, 5, 6), kept=(1, 2, 3))
    assert tracker.bar_text() == "0 / 3 pages" and "3 kept" in tracker.text()
    assert "time left after page 4" in tracker.text()
    tracker.model_loading()
    clock.now += 60                                   # loading the model is not decoding
    tracker.model_loaded()
    tracker.page_started(4)
    clock.now += 30
    tracker.page_done(page_result(4, tokens=300, markdown="x" * 1200))
    assert tracker.tokens_per_second() == pytest.approx(10.0)
    assert tracker.seconds_left() == pytest.approx(60.0)  # 2 pages of 300 tokens at 10 tokens/s
    tracker.page_started(5)
    tracker.text_appended("x" * 2400)                 # page 5 has written 600 tokens already...
    clock.now += 60
    left = tracker.seconds_left()
    assert left == pytest.approx(600 / (900 / 90))    # ...so page 6 counts 600, not 300
    assert "about 1 min 00 s left" in tracker.text()


def test_resumed_run_reports_kept_pages_apart(qtbot, window, tmp_path):
    doc = window.add_files([make_pdf(tmp_path / "r.pdf", pages=5)], convert=False)[0]
    run_events(window, doc, [DocumentPlanned(str(doc.path), "out.md", 5, (1, 2, 3, 4, 5), kept=(1, 2, 3))]
               + [PageKept(p, page_result(p, tokens=5000)) for p in (1, 2, 3)]
               + [ModelLoading("m")])
    assert "loading the model" in window.progress_label.text() and "3 kept" in window.progress_label.text()
    run_events(window, doc, [ModelLoaded("m", 1.0), PageDrafting(4), PageStarted(4, 0, 2)])
    assert window.progress.format() == "0 / 2 pages"
    assert "tokens/s" in window.progress_label.text() and "5000" not in window.progress_label.text()


# -- 3. one story -----------------------------------------------------------------------------------


def test_a_region_the_page_pass_verified_tells_one_story_everywhere(qtbot, window, tmp_path):
    """Region 2 was not verified on its crop, but the page accepted 6 of its 10 draft tokens: the
    overlay colours it, the inspector compares it and the status bar says so; none says "not verified"."""
    from app.page_view import acceptance_color

    doc = window.add_files([make_pdf(tmp_path / "n.pdf")], convert=False)[0]
    regions = [Region("title", (20, 20, 300, 50), "Title", "textlayer"),
               Region("text", (20, 60, 300, 120), "Body of the page.", "textlayer")]
    stats = [RegionStats("title", regions[0].bbox, drafted_tokens=2, accepted_tokens=2),
             RegionStats("text", regions[1].bbox, drafted_tokens=10, page_accepted_tokens=6, verified=False)]
    markdown = "# Title\n\nBody of the page."
    result = page_result(1, regions=regions, stats=stats, markdown=markdown,
                         spans=[TextSpan(0, 0, 7), TextSpan(1, 9, len(markdown))])
    doc.pages[1].finished(result)
    window.show_page(1)
    window.inspection.select(1)
    window.inspection.refresh("hsd", running=False)  # new numbers keep the selection drawn
    assert window.page_view.region_items[1].pen().widthF() > 2
    assert window.inspector.state == "verified" and "not verified" not in window.inspector.header.text()
    assert "page Markdown accepted" in window.inspector.verified_label.text()
    assert "60% of its draft accepted" in window.status_label.text() and "1 stretch" in window.status_label.text()
    item = window.page_view.region_items[1]
    assert item.brush().color().rgb() == acceptance_color(0.6).rgb()
    assert "not verified" not in item.toolTip()


def test_every_pane_is_cleared_on_a_page_or_document_change(qtbot, window, tmp_path):
    doc = window.add_files([make_pdf(tmp_path / "scan.pdf", pages=2)], convert=False)[0]
    scan = [Region("text", (20, 20, 300, 80), "OCR text", "rapidocr")]
    doc.pages[1].finished(page_result(1, regions=scan))
    window.show_page(1)
    window.inspection.select(0)
    assert "rapidocr" in window.inspector.draft_label.text() and "Region 1" in window.status_label.text()
    window.show_page(2)
    assert window.inspector.state == "empty"
    assert window.inspector.draft_label.text() == "<b>Draft</b> (drafter)"
    assert window.inspector.verified_label.text() == "<b>Verified</b> (model)"
    assert "Region 1" not in window.status_label.text() and window.status_label.text().startswith("Page 2")
    window.show_page(1)
    window.inspection.select(0)
    other = window.add_files([make_pdf(tmp_path / "text.pdf")], convert=False)[0]
    assert window.current is other and window.inspector.state == "empty"
    assert "rapidocr" not in window.inspector.draft_label.text() and "Region 1" not in window.status_label.text()


def test_clicking_the_page_outside_every_region_deselects(qtbot, window, tmp_path):
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    doc = window.add_files([make_pdf(tmp_path / "c.pdf")], convert=False)[0]
    doc.pages[1].finished(page_result(1))
    window.show_page(1)
    view = window.page_view
    inside = view.mapFromScene(view.region_items[0].rect().center())
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=inside)
    assert view.highlighted == 0 and window.inspector.region_index == 0
    page_rect = view.mapFromScene(view.page_item.sceneBoundingRect()).boundingRect()
    outside = QPoint(page_rect.center().x(), page_rect.bottom() - 8)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=outside)
    assert view.highlighted is None and window.inspector.state == "empty"
    assert window.status_label.text().startswith("Page 1")


# -- 4. honest states -------------------------------------------------------------------------------


def test_cut_failed_and_damaged_are_said_in_the_list_status_and_export(qtbot, window, tmp_path):
    doc = window.add_files([make_pdf(tmp_path / "cut.pdf", pages=6)], convert=False)[0]
    events = [DocumentPlanned(str(doc.path), "out.md", 6, tuple(range(1, 7)),
                              damaged="the file was damaged and repaired: 2 objects could not be read")]
    for p in range(1, 6):
        events += [PageStarted(p, p - 1, 6), PageDone(p, page_result(p, stop="max_new_tokens"))]
    events += [PageStarted(6, 5, 6), PageDone(6, page_result(6, error="decoding crashed"))]
    run_events(window, doc, events + [DocumentDone(str(tmp_path / "out.md"))])
    finish(window)
    line = window.queue.item(0).text()
    assert "done · 5 pages cut at the token limit · page 6 failed · damaged" in line
    assert "5 pages cut at the token limit" in window.status_label.text()
    assert "damaged and repaired" in window.queue.item(0).toolTip()
    written = window.exports.markdown_to(tmp_path / "export" / "cut.md")
    assert written is not None and "5 pages cut at the token limit" in window.status_label.text()


def test_pages_outside_the_range_read_not_in_range(qtbot, window, app_settings, tmp_path):
    from PySide6.QtCore import Qt

    conversion = app_settings.conversion()
    conversion.pages = "1"
    app_settings.set_conversion(conversion)
    with qtbot.waitSignal(window.document_finished, timeout=PATIENCE_MS):
        window.add_files([make_pdf(tmp_path / "three.pdf", pages=3)])
        assert window.thumbs.item(1).data(Qt.ItemDataRole.UserRole) == "not in range"
    assert [window.thumbs.item(i).data(Qt.ItemDataRole.UserRole) for i in (1, 2)] == ["not in range"] * 2
    assert "not in range" in window.thumbs.item(1).text()
    assert window.queue.item(0).text().endswith("1 of 3 pages · done") or \
        "1 of 3 pages · done" in window.queue.item(0).text()


# -- 5. quitting ------------------------------------------------------------------------------------


def test_quitting_asks_pauses_the_conversion_while_asking_and_keeps_finished_pages(qtbot, window, app_settings,
                                                                                   tmp_path):
    conversion = app_settings.conversion()
    conversion.max_new_tokens = 400
    app_settings.set_conversion(conversion)
    pdf = make_pdf(tmp_path / "long.pdf", pages=2)
    window.add_files([pdf])
    qtbot.waitUntil(lambda: streaming(window), timeout=PATIENCE_MS)
    doc = window.conversion.running
    asked = []

    def confirm():
        worker = window.conversion.worker
        qtbot.waitUntil(worker.held.is_set, timeout=PATIENCE_MS)  # the pass under way when the dialog opened ends
        qtbot.wait(50)  # and what it streamed is shown
        before = sum(len(r.text) for r in doc.pages.values())
        qtbot.wait(1000)  # the dialog stays up: nothing moves behind it
        asked.append((before, sum(len(r.text) for r in doc.pages.values())))
        return False

    window.confirm_quit = confirm
    window.close()
    assert window.isVisible() and asked and asked[0][0] == asked[0][1]
    qtbot.waitUntil(lambda: sum(len(r.text) for r in doc.pages.values()) > asked[0][1], timeout=PATIENCE_MS)  # resumed
    window.confirm_quit = lambda: True
    window.close()
    assert not window.isVisible() and window.quit_mid_conversion


QUIT_DRIVER = """
import multiprocessing, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from app import main as app_main
from app.main_window import MainWindow
app = QApplication(['hsd-studio'])
MainWindow.confirm_quit = lambda self: True
WHEN = {when!r}
def watch():
    window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
    doc = window.documents[0] if window.documents else None
    converting = doc is not None and doc is window.conversion.running
    if (WHEN == 'converting' and converting and doc.results) or (WHEN == 'done' and doc is not None
                                                                 and doc.status == 'done'):
        print('CHILDREN', *[c.pid for c in multiprocessing.active_children()], flush=True)
        print('QUIT', doc.status, flush=True)
        window.close()
    elif doc is not None and doc.status not in ('queued', 'converting', 'done'):
        print('MISSED', doc.status, flush=True)
        QApplication.quit()
    else:
        QTimer.singleShot(10, watch)
QTimer.singleShot(100, watch)
sys.exit(app_main.main(['--settings', {ini!r}, {pdf!r}]))
"""


def quit_the_app(tmp_path, tiny_model, pdf, when: str, max_new_tokens: int) -> list[str]:
    """Run the app on ``pdf`` in its own process and close its window ``when`` ("converting": once a
    page is finished; "done": once the document is). Returns the lines it printed, once the process
    and every process it started have ended (they hold its output open until then)."""
    import os

    from core import tuning

    ini = tmp_path / "s.ini"
    ini.write_text(f"[conversion]\nmodel={tiny_model}\ndevice=cpu\ndrafter=textlayer\nmode=hsd\ntau=1\n"
                   f"dpi=72\npages=\nmax_new_tokens={max_new_tokens}\n\n[General]\ncache_dir={tmp_path / 'cache'}\n",
                   "utf-8")
    driver = QUIT_DRIVER.format(when=when, ini=str(ini), pdf=str(pdf))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    child = subprocess.Popen([sys.executable, "-c", driver], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        out, _ = child.communicate(timeout=tuning.PATIENCE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, 9)
        child.communicate()
        pytest.fail("the app, or a process it started, was still running long after its window closed")
    assert child.returncode == 0, out
    lines = out.strip().splitlines()
    assert lines and lines[-1].startswith("QUIT"), out
    return lines


@pytest.mark.slow
def test_the_app_and_its_drafting_process_end_after_yes_keeping_finished_pages(tmp_path, tiny_model):
    """The real process: converting, Quit, Yes: the app ends, and so does its drafting process
    (it ran at idle priority and kept the app's output open for a minute on a busy machine); the
    finished page is kept."""
    pdf = make_pdf(tmp_path / "quit.pdf", pages=8)
    lines = quit_the_app(tmp_path, tiny_model, pdf, "converting", 60)
    assert lines[-1] == "QUIT converting"
    from app.worker import document_cache_dir

    work = document_cache_dir(tmp_path / "cache", pdf)
    assert list(work.glob(".quit.md.hsd/page-0001.json")), "the finished page was not kept"


@pytest.mark.slow
def test_an_idle_quit_ends_the_process_and_its_drafting_process_keeping_the_layout(tmp_path, tiny_model):
    """After the document is done, closing the window ends the process at once: it no longer stays
    to tear down the model's libraries (seconds), nor waits for its idle-priority drafting process;
    the settings and the window's layout are saved."""
    from PySide6.QtCore import QSettings

    pdf = make_pdf(tmp_path / "idle.pdf", pages=2)
    lines = quit_the_app(tmp_path, tiny_model, pdf, "done", 8)
    assert lines[-1] == "QUIT done"
    children = [int(pid) for pid in lines[-2].split()[1:]]
    assert children, "no drafting process ran: nothing checks that it ends"
    for pid in children:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone
        assert state == "Z", f"the drafting process {pid} still runs ({state})"
    assert QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat).value("window/geometry") is not None
    assert (tmp_path / "cache").exists()


# -- 6. fit -----------------------------------------------------------------------------------------


def test_names_and_labels_are_elided_in_the_middle_with_a_tooltip(qtbot, window, tmp_path):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QStyleOptionViewItem

    from app.page_story import STATE_LABEL

    name = "docling_code_and_formula_with_a_really_long_name_from_a_report.pdf"
    window.add_files([make_pdf(tmp_path / name)], convert=False)
    assert str(tmp_path / name) in window.queue.item(0).toolTip()
    window.left_splitter.parentWidget().setMinimumWidth(0)
    window.main_splitter.setSizes([180, 600, 600])
    qtbot.wait(20)
    queue = window.queue
    assert queue.horizontalScrollBar().maximum() == 0  # never scrolled sideways: elided
    option = QStyleOptionViewItem()
    option.initFrom(queue)
    option.rect = queue.visualItemRect(queue.item(0))
    queue.itemDelegate().initStyleOption(option, queue.model().index(0, 0))
    shown = option.text.split("\u2028")[0]
    assert "…" in shown and shown.startswith("docling_") and shown.endswith(".pdf")
    assert option.fontMetrics.horizontalAdvance(shown) <= queue.viewport().width()
    thumbs = window.thumbs
    assert thumbs.textElideMode() == Qt.TextElideMode.ElideMiddle
    fm, grid, icon = thumbs.fontMetrics(), thumbs.gridSize(), thumbs.iconSize()
    for label in [*STATE_LABEL.values(), "drafting (OCR) · 42 s", "12 ⚠"]:
        assert fm.horizontalAdvance(label) <= grid.width() - 8, label
    assert grid.height() - icon.height() >= 2 * fm.lineSpacing()
    window.markdown_title.setText("Markdown — page 12: drafting (OCR) · 31 s " + "x" * 200)
    window.markdown_title.resize(200, window.markdown_title.height())
    assert window.markdown_title.elided and "x" * 200 in window.markdown_title.toolTip()


def test_nothing_clipped_in_the_status_bar_at_1280_pixels(qtbot, window, tmp_path):
    window.resize(1280, 770)
    doc = window.add_files([make_pdf(tmp_path / "a_rather_long_document_name_for_the_status.pdf", pages=5)],
                           convert=False)[0]
    run_events(window, doc, [DocumentPlanned(str(doc.path), "o.md", 5, (1, 2, 3, 4, 5), kept=(1, 2)),
                             PageDrafting(3, "rapidocr"), PageStarted(3, 0, 3), TextAppended(3, "x" * 12345)])
    window._running_changed()
    window.set_status("a_rather_long_document_name_for_the_status.pdf: converting page 3 (1 of 3) " * 3)
    qtbot.wait(50)
    bar = window.statusBar()
    assert bar.height() <= 3 * window.status_label.fontMetrics().lineSpacing()
    for widget in (window.status_label, window.progress_label, window.progress, window.zoom_label,
                   window.settings_label):
        if widget.isVisible():
            geometry = widget.geometry()
            assert geometry.right() <= bar.width() and geometry.width() > 0, widget
    assert window.progress.fontMetrics().horizontalAdvance(window.progress.text()) < window.progress.width()


def test_the_legend_names_every_page_frame_colour(qtbot, window):
    from app.thumbnails import LEGEND, STATE_COLOR, THIN

    text = window.frame_legend.text().replace("&nbsp;", " ")
    for state, colour in STATE_COLOR.items():
        if state not in THIN:
            assert colour.name() in text, state
            assert state in dict(LEGEND)
    assert "partial" in text and "token limit" in text


# -- drafting is visible ----------------------------------------------------------------------------


def test_a_page_shows_drafting_ocr_with_its_elapsed_time(qtbot, window, tmp_path):
    from PySide6.QtCore import Qt

    doc = window.add_files([make_pdf(tmp_path / "scan.pdf", pages=2)], convert=False)[0]
    run_events(window, doc, [DocumentPlanned(str(doc.path), "o.md", 2, (1, 2)), PageDrafting(2, "rapidocr")])
    item = window.thumbs.item(1)
    assert item.data(Qt.ItemDataRole.UserRole) == "drafting" and "drafting (OCR) · 0 s" in item.text()
    doc.pages[2].drafting_since -= 12  # twelve seconds later, the clock ticks
    window.conversion._tick()
    assert "drafting (OCR) · 12 s" in window.thumbs.item(1).text()
    window.show_page(2)
    assert "drafting (OCR) · 12 s" in window.markdown_title.text()
    run_events(window, doc, [PageStarted(2, 0, 2)])  # the decode waits for the drafts
    assert "page 2: drafting (OCR) · 12 s" in window.progress_label.text()
    rect = window.thumbs.visualItemRect(window.thumbs.item(1))
    assert rect.width() >= window.thumbs.fontMetrics().horizontalAdvance("drafting (OCR) · 12 s")
    run_events(window, doc, [RegionsDrafted(2, [Region("text", (20, 20, 300, 80), "t", "rapidocr")], 12.0)])
    assert "drafting" not in window.thumbs.item(1).text()
    assert len(window.page_view.region_items) == 1


def test_defaults_come_from_core():
    """The app's default settings are ``core.tuning``'s, and convert as ``hsd convert`` does
    without options."""
    from dataclasses import asdict

    from app.settings import ConversionSettings
    from core import tuning
    from core.api import engine_config
    from core.cli import build_parser

    s = ConversionSettings()
    assert (s.mode, s.tau, s.drafter, s.scan_layout, s.dpi, s.max_new_tokens) == (
        tuning.DEFAULT_MODE, tuning.DEFAULT_TAU, tuning.DEFAULT_DRAFTER, tuning.DEFAULT_SCAN_LAYOUT, tuning.DPI,
        tuning.MAX_NEW_TOKENS)
    cli = engine_config(build_parser().parse_args(["convert", "in.pdf", "-o", "out.md"]))
    assert asdict(s.engine_config()) == asdict(cli)
