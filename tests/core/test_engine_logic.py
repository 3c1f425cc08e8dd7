"""Engine logic that no architecture decides: cancelling, drafts arriving mid-decode, a failing
drafter, the short-page rule. Run on the replay target (``core.bench.replay``), a stand-in whose greedy
output is a reference text and whose passes take no time; the losslessness matrix on tiny real
models is ``test_engine``."""

from __future__ import annotations

import threading
import time

import pytest
from PIL import Image

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.background import DraftJob
from core import tuning
from core.drafters.base import DrafterBase, OcrLine, Region
from core.engine import Engine, EngineConfig
from core.errors import CancelledError
from core.events import RegionVerified
from core.page_pipeline import render_and_draft

W, H = 420.0, 595.0
PARAGRAPHS = [f"Paragraph {i}: the drafts of this page are verified by the target in batched passes, "
              f"and every accepted token is the one greedy decoding writes ({i * 37} of them)." for i in range(8)]
REF = "\n\n".join(PARAGRAPHS)


def _regions(source: str = "rapidocr", texts=PARAGRAPHS) -> list[Region]:
    return [Region("text", (10, 10 + 70 * i, 410, 70 + 70 * i), t, source) for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def target():
    return ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))


def _engine(target, mode="hsd", **kw) -> Engine:
    return Engine(EngineConfig(mode=mode, max_new_tokens=2048, **kw), target=target, drafter=None)


def _convert(target, regions, mode="hsd", refs=None, **kw):
    target.set_page(REF, refs if refs is not None else [r.text for r in _as_list(regions)])
    return _engine(target, mode).convert_image(Image.new("RGB", (int(W), int(H)), "white"), regions, W, H, **kw)


def _as_list(regions):
    return regions.result() if isinstance(regions, DraftJob) else regions


def test_the_stand_in_is_a_fair_page(target):
    ar = _convert(target, [], "ar")
    hsd = _convert(target, _regions())
    assert ar.markdown == hsd.markdown == REF
    assert hsd.stats.forward_passes * 4 < ar.stats.forward_passes


def test_cancel_mid_page_stops_at_the_first_check_that_says_yes(target):
    calls = {"n": 0}

    def should_cancel():
        calls["n"] += 1
        return calls["n"] > 5

    with pytest.raises(CancelledError):
        _convert(target, [], "ar", should_cancel=should_cancel)
    assert calls["n"] == 6  # checked between passes, stopped at once


class _GatedDrafter(DrafterBase):
    """Delivers its regions once ``gate`` opens (an OCR drafter on a busy CPU)."""

    name = "gated"

    def __init__(self, regions, gate: threading.Event):
        self.regions, self.gate = regions, gate

    def draft(self, page):
        self.gate.wait(10)
        return self.regions


@pytest.mark.parametrize("mode", ["hsd", "page"])
def test_drafts_arriving_mid_decode_keep_the_output(target, mode):
    """Drafts delivered while the page decodes change passes, never tokens; the result carries the
    regions and says how many passes ran before they arrived."""
    regions, gate, passes = _regions(), threading.Event(), {"n": 0}

    def count_passes():
        passes["n"] += 1
        if passes["n"] == 20:
            gate.set()  # the drafter delivers after 20 passes of plain decoding
            job.result()  # and is done before the next pass, however busy the machine
        return False

    job = DraftJob(_GatedDrafter(regions, gate), page=None)
    late = _convert(target, job, mode, refs=[r.text for r in regions], should_cancel=count_passes)
    at_once = _convert(target, regions, mode)
    never = _convert(target, [], mode)
    assert late.markdown == at_once.markdown == REF
    assert [r.text for r in late.regions] == PARAGRAPHS and len(late.region_stats) == len(regions)
    assert at_once.stats.forward_passes < late.stats.forward_passes < never.stats.forward_passes
    assert at_once.stats.passes_before_drafts == 0
    assert 19 <= late.stats.passes_before_drafts <= 21  # the drafts were in at the 20th check


class _ReadingDrafter(_GatedDrafter):
    """An OCR drafter: tells its lines as it reads them (some misread, in the detector's order),
    then delivers its regions once ``gate`` opens."""

    streams_lines = True

    def draft(self, page, on_lines=None):
        lines = [line.replace("verified", "verifed") for text in PARAGRAPHS
                 for line in (text[:60], text[60:])]
        if on_lines is not None:
            on_lines(lines[:6])
            on_lines(lines[6:])
        return super().draft(page)


@pytest.mark.parametrize("mode", ["hsd", "page"])
def test_lines_read_before_the_regions_keep_the_output_and_save_passes(target, mode):
    """The lines an OCR drafter has read serve as drafts until its regions arrive: fewer passes,
    the same tokens, and the page says when the first lines came."""
    results = {}
    for name, drafter in (("lines", _ReadingDrafter), ("regions only", _GatedDrafter)):
        gate, passes = threading.Event(), {"n": 0}

        def count_passes(gate=gate, passes=passes):
            passes["n"] += 1
            if passes["n"] == 40:
                gate.set()
            return False

        job = DraftJob(drafter(_regions(), gate), page=None)
        time.sleep(0.05)  # the lines are read before the page's first pass
        results[name] = _convert(target, job, mode, refs=PARAGRAPHS, should_cancel=count_passes)
    early, late = results["lines"], results["regions only"]
    assert early.markdown == late.markdown == REF
    assert early.stats.forward_passes < late.stats.forward_passes
    assert early.stats.passes_before_lines == 0 < early.stats.passes_before_drafts
    assert late.stats.passes_before_lines == late.stats.passes_before_drafts > 0
    assert [r.text for r in early.regions] == PARAGRAPHS  # the regions, not the lines, are the page's
    # what was accepted from the lines is credited to no region
    assert {span.region for span in early.spans} <= {None, *range(len(PARAGRAPHS))}
    assert any(span.region is None for span in early.spans[:1])


class _BoxedLinesThenRegions:
    """A drafting whose OCR lines, with their boxes, are there from the first pass and whose
    regions arrive at the ``polls``-th look (an OCR drafter beside the decode, without threads)."""

    error, seconds = None, 0.0

    def __init__(self, lines, regions, polls: int):
        self.lines, self.regions, self.left = lines, regions, polls

    def early_lines(self):
        return self.lines

    def done(self) -> bool:
        self.left -= 1
        return self.left < 0

    def result(self):
        return self.regions


def _boxed_lines(misread: bool = True):
    """Each paragraph's two lines, inside its region's box, some words misread."""
    lines, refs = [], []
    for i, text in enumerate(PARAGRAPHS):
        cut = text.index(" ", 60)
        for k, part in enumerate((text[:cut], text[cut + 1:])):
            y = 10 + 70 * i + 30 * k
            lines.append(OcrLine(part.replace("verified", "verifed") if misread else part, (12, y, 408, y + 28)))
            refs.append(part)
    return lines, refs


def test_stage1_reads_the_early_lines_on_their_crops(target, monkeypatch):
    """Before its regions come, hsd reads each early OCR line with a box on its crop (Stage 1, as a
    region): its reading refines the page's drafts; a text region all of whose lines were read
    takes their readings joined and needs no crop of its own. The same output as with the lines'
    text alone, in fewer passes, and nothing credited to a line (lines are no regions of the page)."""
    lines, line_refs = _boxed_lines()
    results = {}
    for line_rows in (True, False):
        monkeypatch.setattr(tuning, "EARLY_LINE_ROWS", line_rows)
        events = []
        target.set_page(REF, PARAGRAPHS, line_refs)
        result = _engine(target).convert_image(Image.new("RGB", (int(W), int(H)), "white"),
                                               _BoxedLinesThenRegions(lines, _regions(), polls=10), W, H,
                                               on_event=events.append)
        verified = [e.region for e in events if isinstance(e, RegionVerified)]
        results[line_rows] = result, verified
        assert result.markdown == REF
        assert result.stats.passes_before_lines == 0 < result.stats.passes_before_drafts
        assert {span.region for span in result.spans} <= {None, *range(len(PARAGRAPHS))}
        assert all(0 <= r < len(PARAGRAPHS) for r in verified)  # no event names a line
    (rows, told), (text_only, _) = results[True], results[False]
    read = [i for i, rs in enumerate(rows.region_stats) if rs.verified]
    assert read and sorted(set(told)) == read  # each region verified by its lines is told once
    assert all(rows.region_stats[i].output_tokens > 0 for i in read)
    assert rows.stats.forward_passes < text_only.stats.forward_passes
    assert rows.stats.lines_read > 0 and 0 < rows.stats.regions_read_by_lines <= len(read)
    assert text_only.stats.lines_read == text_only.stats.regions_read_by_lines == 0


def test_a_failing_background_drafter_costs_speed_not_the_page(target):
    class Broken(DrafterBase):
        name = "broken"

        def draft(self, page):
            raise RuntimeError("model file missing")

    job = DraftJob(Broken(), page=None)
    result = _convert(target, job, refs=[])
    assert result.markdown == REF and result.regions == []
    assert job.error == "RuntimeError: model file missing"


def test_a_failing_drafter_is_recorded_on_the_page(target):
    class Broken(DrafterBase):
        name = "broken"

        def draft(self, page):
            raise RuntimeError("model file missing")

    class Page:
        width, height, number = W, H, 1

        def render(self, dpi):
            return Image.new("RGB", (int(W), int(H)), "white")

    target.set_page(REF, [])
    engine = Engine(EngineConfig(mode="hsd", max_new_tokens=2048), target=target)
    page = render_and_draft(Page(), 72, Broken())
    result = engine.convert_image(page.image, page.drafts, W, H, seconds=page.seconds)
    assert result.markdown == REF and result.error is None
    assert result.draft_failure == "RuntimeError: model file missing"
    assert set(result.stats.seconds) == {"render", "draft", "prefill", "verify", "total"}


def test_cancelling_a_page_waits_for_its_drafter(target):
    """No drafter thread outlives its page (it may be reading the PDF, which PyMuPDF cannot share)."""
    finished = []

    class Drafter(DrafterBase):
        name = "slow"

        def draft(self, page):
            time.sleep(0.3)
            finished.append(True)
            return []

    class Page:
        width, height, number = W, H, 1

        def render(self, dpi):
            return Image.new("RGB", (int(W), int(H)), "white")

    target.set_page(REF, [])
    engine = Engine(EngineConfig(mode="hsd", background_drafting="on"), target=target)
    assert engine.drafts_beside_decode
    assert not Engine(EngineConfig(), target=target).drafts_beside_decode  # auto, and the target is on the CPU
    page = render_and_draft(Page(), 72, Drafter(), background=True)
    with pytest.raises(CancelledError):
        engine.convert_image(page.image, page.drafts, W, H, should_cancel=lambda: True)
    assert finished == [True]


def test_a_short_exact_text_page_goes_without_stage1(target):
    """Stage 1 cannot pay for its crop prefill on a short page whose drafts are the document's own
    text; a reading of pixels (OCR) of the same length still gets it; a long page does too."""
    short = refs = ["Total revenue grew.", "Costs fell by half."]
    exact = _convert(target, _regions("textlayer", short), refs=refs)
    assert exact.stats.prefill_passes == 1 and not any(s.verified for s in exact.region_stats)
    ocr = _convert(target, _regions("rapidocr", short), refs=refs)
    assert ocr.stats.prefill_passes == 2 and all(s.verified for s in ocr.region_stats)
    long = _convert(target, _regions("textlayer"))
    assert long.stats.prefill_passes == 2 and all(s.verified for s in long.region_stats)
    assert exact.markdown == ocr.markdown == long.markdown == REF


def test_skipped_drafters_go_to_stage2_unrefined(target):
    target.set_page(REF, PARAGRAPHS)
    engine = Engine(EngineConfig(mode="hsd", max_new_tokens=2048, stage1_skip_sources=("rapidocr",)),
                    target=target, drafter=None)
    result = engine.convert_image(Image.new("RGB", (int(W), int(H)), "white"), _regions("rapidocr"), W, H)
    assert result.markdown == REF
    assert result.stats.prefill_passes == 1 and not any(s.verified for s in result.region_stats)


def test_loading_says_how_long_the_fast_engine_compiled():
    """``prepare`` returns the seconds of loading spent compiling passes: the fast engine's, 0 for eager."""

    class Compiled:
        compile_seconds = 41.5

    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    assert Engine(EngineConfig(), target=target, drafter="textlayer").prepare() == 0.0
    target.fast_passes = Compiled()
    assert Engine(EngineConfig(), target=target, drafter="textlayer").prepare() == 41.5
