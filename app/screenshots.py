"""Screenshots of the real app in its main states, for the docs.

    python3 -m app.screenshots [--out docs/screenshots] [--model DIR]

Drives ``MainWindow`` offscreen (``QT_QPA_PLATFORM=offscreen`` unless a display is asked for with
``--show``) through: empty window, a conversion in progress, the finished page with its overlay, and
the draft inspector on one region; saves one PNG of each.

With no ``--model`` it builds a tiny random model (no download), whose output is gibberish and which
would reject every real draft: every region would be red. So that the pictures show the whole colour
scale, the demo seeds some drafts with the model's own output: a first run records what the model
writes for each region crop, then the app converts with a text-layer drafter whose drafts for a few
regions are that text (all of it, part of it, or none). Everything else is the app and engine as
users run them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

SIZE = (1280, 800)


def make_demo_pdf(path: Path) -> Path:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=420, height=560)
    page.insert_text((40, 58), "Speculative Decoding Notes", fontsize=18)
    body = [
        "Document models write a page one token at a time. A",
        "cheap drafter proposes the text of each layout region,",
        "and the model verifies several draft tokens per pass.",
    ]
    for i, line in enumerate(body):
        page.insert_text((40, 96 + 14 * i), line, fontsize=10)
    page.insert_text((40, 160), "Results", fontsize=13)
    for i, line in enumerate(["Accepted drafts cost a fraction of a decoding step,",
                              "rewritten ones cost what plain decoding costs."]):
        page.insert_text((40, 182 + 14 * i), line, fontsize=10)
    items = ["1. Draft every region from the text layer.", "2. Verify the drafts region by region.",
             "3. Verify the refined text on the whole page."]
    for i, line in enumerate(items):
        page.insert_text((52, 236 + 14 * i), line, fontsize=10)
    page.insert_text((40, 300), "Footnotes and captions are drafted too.", fontsize=9)
    page.insert_text((200, 540), "1", fontsize=9)
    page2 = doc.new_page(width=420, height=560)
    page2.insert_text((40, 58), "Appendix", fontsize=18)
    page2.insert_text((40, 96), "A second page, converted after the first one.", fontsize=10)
    doc.save(str(path))
    doc.close()
    return path


class SeededDrafter:
    """The text-layer drafter with some regions' drafts replaced (by index) for the demo."""

    name = "textlayer"

    def __init__(self, seeds: dict[int, str]):
        from core.api import get_drafter

        self.inner = get_drafter("textlayer")
        self.seeds = seeds

    def draft(self, page):
        regions = list(self.inner.draft(page))
        if page.number == 1:
            for i, text in self.seeds.items():
                if i < len(regions) and text.strip():
                    regions[i].text = text
        return regions


def demo_seeds(config, pdf: Path) -> dict[int, str]:
    """Region texts for page 1: the model's own Stage 1 output for some regions (whole or a part)."""
    from core.api import open_document
    from core.api import Engine, clean_draft

    config.stage1_give_up = 0.0  # let Stage 1 write each region in full
    engine = Engine(config)
    with open_document(pdf) as doc:
        result = next(iter(engine.convert_document(doc, [0])))
    target = engine.target
    seeds: dict[int, str] = {}
    shares = [1.0, 0.7, 0.0, 0.45, 1.0, 0.2]
    for i, (region, out) in enumerate(zip(result.regions, result.region_outputs)):
        share = shares[i % len(shares)]
        tokens = target.encode(clean_draft(out)) if out else []
        if not tokens or share == 0.0:
            continue
        if share >= 1.0:
            seeds[i] = out
        else:
            keep = max(1, int(len(tokens) * share))
            seeds[i] = target.decode(tokens[:keep]) + " " + region.text
    return seeds


def pump(app, until, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        app.processEvents()
        if until():
            return True
        time.sleep(0.02)
    return False


def save(window, path: Path) -> Path:
    from PIL import Image

    window.repaint()
    image = window.grab().toImage()
    image.save(str(path))
    if path.stat().st_size > 250_000:
        with Image.open(path) as im:  # a 256-colour palette keeps large screenshots small
            im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m app.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/screenshots", help="folder for the PNGs")
    parser.add_argument("--model", default=None, help="model folder (default: a tiny random model)")
    parser.add_argument("--max-new-tokens", type=int, default=120)
    parser.add_argument("--show", action="store_true", help="use the real display instead of offscreen")
    args = parser.parse_args(argv)
    if not args.show:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.settings import AppSettings, ConversionSettings
    from app.worker import EngineCache

    app = QApplication.instance() or QApplication(["hsd-studio"])
    work = Path(tempfile.mkdtemp(prefix="hsd-screenshots-"))
    model = args.model
    if model is None:
        from core.api import build_tiny_model

        model = str(build_tiny_model(work / "tiny-model", "hunyuan_vl", seed=0))
    pdf = make_demo_pdf(work / "speculative-notes.pdf")
    conversion = ConversionSettings(model=model, device="cpu", drafter="textlayer", mode="hsd", tau=1.0,
                                    dpi=110, max_new_tokens=args.max_new_tokens)
    seeds = demo_seeds(conversion.engine_config(), pdf)

    from core.api import Engine

    def factory(config, target=None):
        return Engine(config, target=target, drafter=SeededDrafter(seeds))

    settings = AppSettings(QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat))
    settings.set_conversion(conversion)
    settings.set_cache_dir(work / "cache")
    window = MainWindow(settings, engines=EngineCache(factory))
    window.resize(*SIZE)
    window.show()
    pump(app, lambda: False, 0.3)
    save(window, out / "01-empty.png")

    window.add_files([pdf])
    window.markdown_view.set_scope("page")
    converting = lambda: bool(window.running and len(window.running.live_text.get(1, "")) > 60)  # noqa: E731
    if not pump(app, converting, 300):
        print("conversion did not stream text in time", file=sys.stderr)
    window.markdown_view._render_now()  # the live view re-renders on a timer; draw the latest text
    pump(app, lambda: False, 0.2)
    save(window, out / "02-converting.png")

    finished = []
    window.document_finished.connect(finished.append)
    if not pump(app, lambda: bool(finished), 600):
        print("conversion did not finish in time", file=sys.stderr)
        return 1
    window.show_page(1)
    window.bottom_tabs.setCurrentWidget(window.stats_panel)
    pump(app, lambda: False, 0.3)
    save(window, out / "03-done-overlay.png")

    result = window.current_result()
    # inspect a large region whose draft was partly kept and partly rewritten
    mixed = [i for i, s in enumerate(result.region_stats) if s.verified and 0.2 <= s.acceptance_rate <= 0.9]
    pick = max(mixed or range(len(result.regions)), key=lambda i: result.region_stats[i].drafted_tokens)
    window.select_region(pick)
    pump(app, lambda: False, 0.3)
    save(window, out / "04-draft-inspection.png")
    window.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
