"""Screenshots of the real app in its main states, for the docs (a tool of this repository, not part
of the installed app).

    python3 docs/screenshots/make.py [--out docs/screenshots] [--tiny-model DIR]
    xvfb-run -a -s "-screen 0 1600x1000x24" python3 docs/screenshots/make.py --show   # as committed

Drives ``MainWindow`` offscreen (``QT_QPA_PLATFORM=offscreen`` unless ``--show``: on the display, an X
server's own rendering, as a desktop draws the app) and saves:

1. the first run (``01-empty.png``): the welcome panel, no model configured;
2. the bundled sample converting, 3. converted with its overlay and statistics, 4. the draft
   inspector on one region. These use the benchmark's *replay* stand-in target
   (``core.bench.replay.ReplayTarget``, imported from the benchmark directly): its greedy output is
   the sample's reference Markdown, so the Markdown is real and the acceptance is what the engine
   achieves with the text-layer drafts when the model reads the page exactly like the reference. No
   network runs; a caption under each screenshot says so;
5. the same sample converted by a tiny random model (built locally, no download): the app and
   engine exactly as users run them, with gibberish text and rejected (red) drafts;
6. the review list (``06-review.png``): the replay target again, its reference given the kinds of
   misreading a model makes (``MISREADINGS``: a word changed, words added, words left out), one of
   them chosen: its region highlighted on the page, its words selected in the Markdown, the model's
   words beside the page's; 7. that page corrected in the Markdown pane (``07-edited-page.png``):
   marked "Edited", the place gone from the review list.

Everything else (drafter, engine, worker thread, window) is the app as users run it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

SIZE = (1280, 800)
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script from anywhere: the app and core come from this checkout
    sys.path.insert(0, str(ROOT))
from core.drafters.base import DrafterBase  # noqa: E402  (core imports no Qt: the platform is still free)
SAMPLE = ROOT / "resources" / "sample.pdf"
REPLAY_CAPTION = ("Screenshot with the benchmark's replay stand-in target: its output is the sample's reference "
                  "Markdown (no model ran)")
TINY_CAPTION = "Screenshot with a tiny random model built locally: its text is gibberish and it rejects the drafts"
REVIEW_CAPTION = ("Screenshot with the replay stand-in target, its reference given a model's kinds of misreading "
                  "(no model ran)")
#: What the review screenshots' stand-in writes instead of the sample's words (``sample_reference``):
#: a word misread, words the page does not hold, words left out, a number misread.
MISREADINGS = {
    "headings, two columns of text": "headings, three columns of text",
    "read by a small OCR model.": "read by a small OCR model trained on receipts.",
    "When the drafts are good, most tokens": "Most tokens",
    "Table 1: The two built-in drafters.": "Table 7: The two built-in drafters.",
}
#: The user's correction in ``07-edited-page.png``: the misread word put right.
CORRECTION = ("headings, three columns of text", "headings, two columns of text")


def sample_reference() -> str:
    """The bundled sample's reference Markdown: a faithful transcription of what
    ``resources/make_sample.py`` draws (page numbers left out, as document models do)."""
    spec = importlib.util.spec_from_file_location("make_sample", ROOT / "resources" / "make_sample.py")
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    header, *rows = sample.TABLE
    table = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)] + [f"| {' | '.join(r)} |" for r in rows]
    blocks = ["# HSD Studio Sample Document", "## 1. Introduction", sample.INTRO, "## 2. Two Columns",
              sample.LEFT_COLUMN, sample.RIGHT_COLUMN, "## 3. Lists",
              "\n".join(f"- {b}" for b in sample.BULLETS),
              "\n".join(f"{n}. {s}" for n, s in enumerate(sample.STEPS, 1)),
              "## 4. A Small Table", "\n".join(table), sample.CAPTION]
    return "\n\n".join(blocks) + "\n"


class ReferenceDrafter(DrafterBase):
    """The text-layer drafter, telling the replay target each page's reference as the page is drafted
    (drafting runs before decoding: background drafting is off for the replay engine). It has no spec:
    it drafts in this process, where the replay target can hear it."""

    name = "textlayer"

    def __init__(self, target, page_references: list[str]):
        from core.drafters import get_drafter

        self.inner = get_drafter("textlayer")
        self.target = target
        self.page_references = page_references

    def draft(self, page):
        from core.bench.corpus import region_references, region_spans

        regions = list(self.inner.draft(page))
        reference = self.page_references[page.number - 1] if page.number <= len(self.page_references) else ""
        self.target.set_page(reference, region_references(reference, regions, region_spans(reference, regions)))
        return regions


class SlowReplay:
    """The replay target with a short pause per forward pass, so a screenshot can catch it mid-page."""

    def __init__(self, target, pause: float):
        self._target = target
        self._pause = pause

    def forward(self, *args, **kwargs):
        time.sleep(self._pause)
        return self._target.forward(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._target, name)


def misread(reference: str, misreadings: dict[str, str]) -> str:
    """``reference`` with each of ``misreadings``' words replaced (each must be there once)."""
    for found, written in misreadings.items():
        if reference.count(found) != 1:
            raise ValueError(f"the sample's reference no longer reads {found!r} once")
        reference = reference.replace(found, written)
    return reference


def replay_factory(pdf: Path, pause: float = 0.3, misreadings: dict[str, str] | None = None):
    """An ``EngineCache`` factory: the engine with the replay target and the reference drafter; the
    target writes the reference with ``misreadings``."""
    from core.bench.corpus import prepare_reference, split_reference
    from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
    from core.documents import open_document
    from core.drafters import get_drafter
    from core.engine import Engine

    textlayer = get_drafter("textlayer")
    with open_document(pdf) as doc:
        texts = ["\n\n".join(r.text for r in textlayer.draft(doc.page(i)) if r.text.strip())
                 for i in range(doc.page_count)]
    pages = split_reference(prepare_reference(misread(sample_reference(), misreadings or {})), texts)
    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    target.start_document()
    slow = SlowReplay(target, pause)

    def factory(config, target=None):
        config = replace(config, background_drafting="off")
        return Engine(config, target=slow, drafter=ReferenceDrafter(slow, pages))

    return factory


def pump(app, until, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        app.processEvents()
        if until():
            return True
        time.sleep(0.02)
    return False


def save(window, path: Path, caption: str | None = None) -> Path:
    """The window as it is on screen, with ``caption`` in a strip below it."""
    from PIL import Image
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    window.repaint()
    shot = window.grab().toImage()
    strip = 30 if caption else 0
    image = QImage(shot.width(), shot.height() + strip, QImage.Format.Format_RGB32)
    image.fill(QColor(40, 44, 52))
    painter = QPainter(image)
    painter.drawImage(0, 0, shot)
    if caption:
        font = QFont()
        font.setPointSize(10)
        painter.setFont(font)
        painter.setPen(QColor(240, 240, 240))
        painter.drawText(QRect(10, shot.height(), shot.width() - 20, strip),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, caption)
    painter.end()
    image.save(str(path))
    if path.stat().st_size > 250_000:
        with Image.open(path) as im:  # a 256-colour palette keeps large screenshots small
            im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return path


def _window(app, work: Path, name: str, conversion, engines):
    from PySide6.QtCore import QSettings

    from app.main_window import MainWindow
    from app.settings import AppSettings

    settings = AppSettings(QSettings(str(work / f"{name}.ini"), QSettings.Format.IniFormat))
    if conversion is not None:
        settings.set_conversion(conversion)
    settings.set_cache_dir(work / f"cache-{name}")
    window = MainWindow(settings, engines=engines)
    window.resize(*SIZE)
    window.show()
    pump(app, lambda: False, 0.3)
    return window


def _convert(app, window, pdf: Path, caption: str = REPLAY_CAPTION, converting_shot: Path | None = None) -> bool:
    finished = []
    window.document_finished.connect(finished.append)
    window.add_files([pdf])
    window.markdown_view.set_scope("page")
    if converting_shot is not None:
        def streaming():
            doc = window.conversion.running
            return bool(doc and doc.pages[1].phase == "decoding" and len(doc.pages[1].text) > 120)

        if pump(app, streaming, 300):
            window.markdown_view._render_now()  # the live view re-renders on a timer; draw the latest text
            app.processEvents()
            save(window, converting_shot, caption)
        else:
            print("conversion did not stream text in time", file=sys.stderr)
    if not pump(app, lambda: bool(finished), 600):
        print("conversion did not finish in time", file=sys.stderr)
        return False
    window.show_page(1)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 docs/screenshots/make.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/screenshots", help="folder for the PNGs")
    parser.add_argument("--tiny-model", default=None, help="tiny model folder (default: build one here)")
    parser.add_argument("--show", action="store_true", help="use the real display instead of offscreen")
    args = parser.parse_args(argv)
    if not args.show:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtWidgets import QApplication

    from app import model_check
    from app.settings import ConversionSettings
    from app.worker import EngineCache

    app = QApplication.instance() or QApplication(["hsd-studio"])
    work = Path(tempfile.mkdtemp(prefix="hsd-screenshots-"))

    real_cache = model_check.cached_hub_folder
    model_check.cached_hub_folder = lambda hub_id: None  # a first run: the default model is not here
    window = _window(app, work, "first-run", None, EngineCache())
    save(window, out / "01-empty.png", "First run: no model configured yet")
    window.close()
    model_check.cached_hub_folder = real_cache

    model = args.tiny_model
    if model is None:
        from app.welcome import build_demo_model

        model = str(build_demo_model(work / "tiny-model"))
    # the replay engine ignores the model; a real folder keeps the app's model check satisfied
    replay = ConversionSettings(model=model, device="cpu", drafter="textlayer", mode="hsd", tau=1.0,
                                dpi=110, max_new_tokens=4096)
    window = _window(app, work, "replay", replay, EngineCache(replay_factory(SAMPLE)))
    window.settings_label.setText("replay stand-in target · hsd · tau 1 · textlayer")
    if not _convert(app, window, SAMPLE, REPLAY_CAPTION, out / "02-converting.png"):
        return 1
    window.bottom_tabs.setCurrentWidget(window.stats_panel)
    pump(app, lambda: False, 0.3)
    save(window, out / "03-done-overlay.png", REPLAY_CAPTION)
    result = window.inspection.record.result
    # inspect the text region whose draft the model changed most
    mixed = [i for i, s in enumerate(result.region_stats)
             if s.verified and s.drafted_tokens >= 8 and result.regions[i].label != "page_number"]
    pick = min(mixed or range(len(result.regions)), key=lambda i: result.region_stats[i].acceptance_rate)
    window.labels_action.trigger()  # View > Show region labels
    window.inspection.select(pick)  # the status bar tells the region's story, as the inspector does
    pump(app, lambda: False, 0.3)
    save(window, out / "04-draft-inspection.png", REPLAY_CAPTION)
    window.close()

    tiny = ConversionSettings(model=model, device="cpu", drafter="textlayer", mode="hsd", tau=1.0, dpi=110,
                              pages="1", max_new_tokens=80)
    window = _window(app, work, "tiny", tiny, EngineCache())
    if not _convert(app, window, SAMPLE, TINY_CAPTION):
        return 1
    window.bottom_tabs.setCurrentWidget(window.stats_panel)
    pump(app, lambda: False, 0.3)
    save(window, out / "05-tiny-model.png", TINY_CAPTION)
    window.close()
    return _review_and_edit(app, work, replay, out)


def _review_and_edit(app, work: Path, replay, out: Path) -> int:
    """06: a departure chosen in the review list; 07: its page corrected and marked as edited."""
    from app.worker import EngineCache

    engines = EngineCache(replay_factory(SAMPLE, pause=0.0, misreadings=MISREADINGS))
    window = _window(app, work, "review", replay, engines)
    window.settings_label.setText("replay stand-in target · hsd · tau 1 · textlayer")
    if not _convert(app, window, SAMPLE, REVIEW_CAPTION):
        return 1
    panel = window.review_panel
    if not panel.departures():
        print("the review list found no departures", file=sys.stderr)
        return 1
    # the misread word: the model's words and the page's side by side, the page near print size so
    # that its own words can be read beside the Markdown's
    window.page_view.zoom_by(1.1 / window.page_view.zoom)
    window.next_departure_action.trigger()
    while panel.current().kind != "changed" or panel.current().page != 1:
        window.next_departure_action.trigger()
    pump(app, lambda: False, 0.3)
    save(window, out / "06-review.png", REVIEW_CAPTION)

    view = window.markdown_view
    view.edit_button.setChecked(True)
    wrong, right = CORRECTION
    view.source.setPlainText(view.source.toPlainText().replace(wrong, right))
    view.edit_button.setChecked(False)
    view.tabs.setCurrentWidget(view.rendered)
    pump(app, lambda: False, 0.3)
    if not view.edited_mark.isVisible():
        print("the edited page is not marked", file=sys.stderr)
        return 1
    save(window, out / "07-edited-page.png", REVIEW_CAPTION)
    window.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
