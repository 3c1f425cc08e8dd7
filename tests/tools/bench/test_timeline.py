"""Drafting timelines (``tools.bench.timeline``): recorded once, replayed on a virtual clock."""

from __future__ import annotations

import time

import pytest

from core.drafters.base import DrafterBase, OcrLine, Region
from core.drafters.textlayer import TextLayerDrafter
from tools.bench import timeline
from tools.bench.timeline import PageTimeline, TimedDrafting, VirtualClock


class StreamingDrafter(DrafterBase):
    """The text layer's regions, told first as lines in two chunks a little apart (as the OCR
    recogniser tells them)."""

    streams_lines = True

    def draft(self, page, on_lines=None):
        regions = TextLayerDrafter().draft(page)
        lines = [OcrLine(r.text, r.bbox) for r in regions]
        if on_lines is not None:
            on_lines(lines[:1])
            time.sleep(0.02)
            on_lines(lines[1:])
        time.sleep(0.02)
        return regions


@pytest.fixture(scope="module")
def recorded(synthetic_corpus):
    return timeline.record(synthetic_corpus, StreamingDrafter(), ["beta_note"])


def test_a_recorded_timeline_stamps_the_chunks_and_survives_a_file(recorded, tmp_path):
    (page,) = recorded
    assert page.name == "beta_note" and len(page.chunks) == 2
    (t1, first), (t2, rest) = page.chunks
    assert 0.0 <= t1 < t2 < page.seconds and t2 - t1 >= 0.015
    assert [ln.text for ln in first + rest] == [r.text for r in page.regions]
    timeline.save(recorded, tmp_path / "t.jsonl")
    (back,) = timeline.load(tmp_path / "t.jsonl")
    assert [ln.text for _, c in back.chunks for ln in c] == [ln.text for _, c in page.chunks for ln in c]
    assert all(ln.bbox is not None for _, c in back.chunks for ln in c)
    assert [r.text for r in back.regions] == [r.text for r in page.regions]
    assert back.seconds == pytest.approx(page.seconds, abs=1e-3)


def test_lines_and_regions_appear_when_the_virtual_clock_passes_their_times():
    page = PageTimeline("p", 1.0, [(0.2, [OcrLine("a", (0, 0, 10, 10))]), (0.5, [OcrLine("b", (0, 20, 10, 30))])],
                        [Region("text", (0, 0, 10, 30), "a b", "ocr")])
    clock = VirtualClock(cpu_factor=0.0)
    drafting = TimedDrafting(page, clock, draft_factor=2.0)  # the drafting runs at half speed
    assert drafting.early_lines() == [] and not drafting.done()
    clock.device += 0.5
    assert [ln.text for ln in drafting.early_lines()] == ["a"]
    clock.device += 0.6
    assert [ln.text for ln in drafting.early_lines()] == ["a", "b"] and not drafting.done()
    assert drafting.result() == page.regions  # waited for: the clock stands at the regions' time
    assert clock() == pytest.approx(2.0) and drafting.done()


def test_a_replay_is_repeatable_and_late_drafts_cost_passes_and_seconds(recorded, synthetic_corpus):
    def run(mode, factor):
        (page,) = timeline.replay(synthetic_corpus, recorded, mode, cpu_factor=0.0, draft_factor=factor,
                                  tokenizer="tiny")
        return page

    at_once, again = run("hsd", 0.0), run("hsd", 0.0)
    assert (at_once.passes, at_once.seconds) == (again.passes, again.seconds)  # no CPU time counted: exact
    late = run("hsd", 200.0)  # regions after about 8 s: the page decodes most of itself without them
    ar = run("ar", 1.0)
    # (late may take a pass more than ar: the crop of a line it read before its regions came)
    assert at_once.passes < late.passes and at_once.passes < ar.passes and at_once.seconds < late.seconds
    assert at_once.passes_before_regions == 0 and late.passes_before_regions > 0
    assert ar.seconds >= ar.passes * 0.020  # every pass costs the cost model's fixed part at least
    never = run("hsd", 1e6)  # regions long after the decode: the page is done when its decode ends
    assert never.passes_before_regions == never.passes - 1  # every decoding pass (the prefill is none)
    assert never.passes * 0.020 <= never.seconds < recorded[0].seconds * 1e6


def test_in_reading_order_tells_the_same_lines_at_the_same_times_down_each_column():
    left = [OcrLine(f"left {i}", (0, 20 * i, 100, 20 * i + 12)) for i in range(3)]
    right = [OcrLine(f"right {i}", (140, 20 * i, 240, 20 * i + 12)) for i in range(3)]
    across = [line for pair in zip(left, right) for line in pair]  # the detector's order
    page = PageTimeline("p", 1.0, [(0.1, across[:2]), (0.4, across[2:])], [])
    reordered = timeline.in_reading_order(page)
    assert [t for t, _ in reordered.chunks] == [0.1, 0.4] and [len(c) for _, c in reordered.chunks] == [2, 4]
    assert [ln.text for _, c in reordered.chunks for ln in c] == [ln.text for ln in left + right]


def test_a_replay_stacks_each_chunks_lines_as_the_drafter_would():
    column = [OcrLine(f"line {i} of a paragraph that runs on", (0, 14 * i, 300, 14 * i + 12)) for i in range(5)]
    page = PageTimeline("p", 1.0, [(0.1, column[:2]), (0.4, column[2:])], [])
    stacked = timeline.stacked(page, 3)
    assert [t for t, _ in stacked.chunks] == [0.1, 0.4] and [len(c) for _, c in stacked.chunks] == [1, 1]
    assert stacked.chunks[1][1][0] == OcrLine(" ".join(ln.text for ln in column[2:]), (0, 28, 300, 68))
    assert timeline.stacked(page, 1).chunks == page.chunks


def test_a_timeline_is_recorded_line_by_line(synthetic_corpus, monkeypatch):
    stacks = []

    class Recorder(StreamingDrafter):
        def draft(self, page, on_lines=None):
            stacks.append(timeline.tuning.EARLY_LINES_STACK)  # what a drafter stacking its lines reads
            return super().draft(page, on_lines)

    monkeypatch.setattr(timeline.tuning, "EARLY_LINES_STACK", 3)
    timeline.record(synthetic_corpus, Recorder(), ["beta_note"])
    assert stacks == [1] and timeline.tuning.EARLY_LINES_STACK == 3
