"""A page's context for the stages: one record per region, drafts taken in when they arrive (and
after how many passes), the Stage 1 rules, rows and crops. On the replay stand-in."""

from __future__ import annotations

from PIL import Image

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.engine import EngineConfig
from core.page_job import (DocumentMemory, PageImage, PageJob, PageRegion, PageRegions, _crop, joined_regions)
from core.page_pipeline import PendingDrafts
from core.speculative.decode import DecodeRow

TEXT = "Revenue  grew by 12 % in the second quarter."


def _target():
    return ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))


def _job(regions, mode="hsd", **config) -> PageJob:
    target = _target()
    drafting = DraftJob.finished(regions) if isinstance(regions, list) else regions
    job = PageJob(EngineConfig(mode=mode, **config), target, PageImage(Image.new("RGB", (200, 100)), 0.5, 3),
                  PageRegions(drafting, target.encode))
    job.regions.poll(0)
    return job


def test_a_region_record_holds_its_draft_in_tokens_and_text():
    target = _target()
    text = PageRegion.drafted(Region("text", (0, 0, 10, 10), TEXT, "rapidocr"), target.encode)
    assert text.text and target.decode(text.tokens) == text.text and text.stats.drafted_tokens == len(text.tokens)
    assert not text.exact and not text.is_figure and text.output == "" and not text.stats.verified
    exact = PageRegion.drafted(Region("text", (0, 0, 10, 10), TEXT, "textlayer"), target.encode)
    assert exact.exact
    figure = PageRegion.drafted(Region("figure", (0, 0, 10, 10), "Figure 1: a map", "rapidocr"), target.encode)
    assert figure.is_figure and figure.tokens == [] and figure.text == "" and figure.figure_text == "Figure 1: a map"
    empty = PageRegion.drafted(Region("formula", (0, 0, 10, 10), "", "rapidocr"), target.encode)
    assert empty.tokens == [] and empty.text == ""


def test_regions_arrive_once_and_say_after_how_many_passes():
    pending = PendingDrafts()
    regions = PageRegions(pending, _target().encode)
    assert not regions.poll(3) and len(regions) == 0 and regions.regions == []
    pending.deliver(DraftJob.finished([Region("text", (0, 0, 1, 1), TEXT, "t")]))
    assert regions.poll(7) and not regions.poll(9)
    assert regions.arrived_after == 7 and [r.text for r in regions.regions] == [TEXT]
    regions.wait(12)
    assert regions.arrived_after == 7


def test_stage1_reads_text_regions_except_skipped_drafters_and_short_exact_pages():
    regions = [Region("text", (0, 0, 1, 1), TEXT, "rapidocr"), Region("figure", (0, 0, 1, 1), "", "rapidocr"),
               Region("text", (0, 0, 1, 1), TEXT, "textlayer")]
    assert _job(regions).stage1_todo() == [0, 2]
    assert _job(regions, stage1_skip_sources=("textlayer",)).stage1_todo() == [0]
    assert _job(regions, mode="regions", stage1_skip_sources=("textlayer",)).stage1_todo() == [0, 2]
    exact = [Region("text", (0, 0, 1, 1), TEXT, "textlayer")]
    assert _job(exact).stage1_todo() == []  # short, and the document's own text
    assert _job(exact, stage1_min_tokens=1).stage1_todo() == [0]


def test_a_finished_region_row_is_recorded_and_announced():
    events = []
    job = _job([Region("text", (0, 0, 1, 1), TEXT, "rapidocr"), Region("list", (0, 0, 1, 1), "- a\n- b", "rapidocr")])
    job.emit = events.append
    row = DecodeRow(proposer=None, stop=None, length=1, rope_delta=0, root=0, tag=0,
                    output=job.regions[0].tokens[:3], stop_reason="eos")
    assert job.region_done(row) == job.regions[0].tokens[:3]
    assert job.regions[0].stats.verified and job.regions[0].stats.output_tokens == 3
    assert events[0].region == 0 and events[0].page == 3
    looping = DecodeRow(proposer=None, stop=None, length=1, rope_delta=0, root=0, tag=1, output=[5, 5, 5],
                        stop_reason="repetition")
    assert job.region_done(looping) == job.regions[1].tokens and job.regions[1].stats.fallback
    late = DecodeRow(proposer=None, stop=None, length=1, rope_delta=0, root=0, tag=1, stop_reason="superseded")
    assert job.region_done(late) is None


def test_reset_forgets_stage1():
    job = _job([Region("text", (0, 0, 1, 1), TEXT, "rapidocr")])
    job.regions[0].output, job.regions[0].stats.verified = "read", True
    job.regions.reset_stage1()
    assert job.regions.outputs == [""] and not job.regions[0].stats.verified


def test_the_document_memory_is_shared_or_the_page_learns_alone():
    job = _job([])
    assert job.history is None and job.notation() is not job.notation()
    memory = DocumentMemory.new("doc.pdf", 10)
    job.memory = memory
    assert job.notation() is memory.notation and job.history is memory.history


def test_joined_regions_and_crops():
    text, spans = joined_regions(["Title", "", "Body"])
    assert text == "Title\n\nBody"
    assert [(s.region, text[s.start:s.end]) for s in spans] == [(0, "Title"), (2, "Body")]
    image = Image.new("RGB", (200, 100))
    assert _crop(image, (10, 10, 50, 30), 2.0, 4.0).size == (97, 57)
    assert _crop(image, (500, 500, 600, 600), 2.0, 0.0).size == (200, 100)  # outside: the whole page


def test_the_ocrs_second_readings_reach_the_pages_notation_from_its_lines_and_its_regions():
    from core.drafters.base import OcrLine
    from core.speculative.notation import Notation

    class Drafting:  # an OCR still reading: two lines told, no regions yet
        def done(self):
            return False

        def early_lines(self):
            return [OcrLine("Die Berordnung", (0, 0, 50, 10), {"Berordnung": [[0, "V", 0.4]]}),
                    OcrLine("gilt", (0, 12, 50, 22))]

    target = _target()
    job = PageJob(EngineConfig(mode="hsd"), target, PageImage(Image.new("RGB", (200, 100)), 0.5, 3),
                  PageRegions(Drafting(), target.encode))
    assert job.regions.take_lines(0) == [-1, -2]
    notation = Notation()
    job.line_drafts(notation, {})
    assert notation.second_readings == {"Berordnung": [[0, "V", 0.4]]}
    region = Region("text", (0, 0, 50, 22), "Die Berordnung gilt", "rapidocr",
                    extra={"second_readings": {"gilt": [[0, "q", 0.3]]}})
    _job([region]).page_drafts(notation)  # the regions' readings replace the lines'
    assert notation.second_readings == {"gilt": [[0, "q", 0.3]]}
