"""Stage 1 over one page: which regions it reads, what a finished row leaves, the crops, a page
started over, and the drafts it builds from the early OCR lines and the regions. On the replay
stand-in."""

from __future__ import annotations

from PIL import Image

from core import stage1
from core.drafters.base import Region
from core.engine import EngineConfig
from core.page_job import PageImage, PageJob, PageRegions
from core.speculative.decode import DecodeRow
from tests.core.replay_job import replay_page_job, replay_target

TEXT = "Revenue  grew by 12 % in the second quarter."


def test_stage1_reads_text_regions_except_skipped_drafters_and_short_exact_pages():
    regions = [Region("text", (0, 0, 1, 1), TEXT, "rapidocr"), Region("figure", (0, 0, 1, 1), "", "rapidocr"),
               Region("text", (0, 0, 1, 1), TEXT, "textlayer")]
    assert stage1.todo(replay_page_job(regions)) == [0, 2]
    assert stage1.todo(replay_page_job(regions, stage1_skip_sources=("textlayer",))) == [0]
    assert stage1.todo(replay_page_job(regions, mode="regions", stage1_skip_sources=("textlayer",))) == [0, 2]
    exact = [Region("text", (0, 0, 1, 1), TEXT, "textlayer")]
    assert stage1.todo(replay_page_job(exact)) == []  # short, and the document's own text
    assert stage1.todo(replay_page_job(exact, stage1_min_tokens=1)) == [0]



def test_a_finished_region_row_is_recorded_and_announced():
    events = []
    job = replay_page_job([Region("text", (0, 0, 1, 1), TEXT, "rapidocr"), Region("list", (0, 0, 1, 1), "- a\n- b", "rapidocr")])
    job.emit = events.append
    row = DecodeRow(proposer=None, stop=None, length=1, rope_delta=0, root=0, tag=0,
                    output=job.regions[0].tokens[:3], stop_reason="eos")
    assert stage1.region_done(job, row) == job.regions[0].tokens[:3]
    assert job.regions[0].stats.verified and job.regions[0].stats.output_tokens == 3
    assert events[0].region == 0 and events[0].page == 3
    looping = DecodeRow(proposer=None, stop=None, length=1, rope_delta=0, root=0, tag=1, output=[5, 5, 5],
                        stop_reason="repetition")
    assert stage1.region_done(job, looping) == job.regions[1].tokens and job.regions[1].stats.fallback
    late = DecodeRow(proposer=None, stop=None, length=1, rope_delta=0, root=0, tag=1, stop_reason="superseded")
    assert stage1.region_done(job, late) is None



def test_reset_forgets_stage1_and_its_counts():
    job = replay_page_job([Region("text", (0, 0, 1, 1), TEXT, "rapidocr")])
    job.regions[0].output, job.regions[0].stats.verified = "read", True
    job.stats.lines_read = job.stats.regions_read_by_lines = 2
    stage1.reset(job)
    assert job.regions.outputs == [""] and not job.regions[0].stats.verified
    assert job.stats.lines_read == job.stats.regions_read_by_lines == 0



def test_the_ocrs_second_readings_reach_the_pages_notation_from_its_lines_and_its_regions():
    from core.drafters.base import OcrLine
    from core.speculative.notation import Notation

    class Drafting:  # an OCR still reading: two lines told, no regions yet
        def done(self):
            return False

        def early_lines(self):
            return [OcrLine("Die Berordnung", (0, 0, 50, 10), {"Berordnung": [[0, "V", 0.4]]}),
                    OcrLine("gilt", (0, 12, 50, 22))]

    target = replay_target()
    job = PageJob(EngineConfig(mode="hsd"), target, PageImage(Image.new("RGB", (200, 100)), 0.5, 3),
                  PageRegions(Drafting(), target.encode))
    assert job.regions.take_lines(0) == [-1, -2]
    notation = Notation()
    stage1.line_drafts(job, notation, {})
    assert notation.second_readings == {"Berordnung": [[0, "V", 0.4]]}
    region = Region("text", (0, 0, 50, 22), "Die Berordnung gilt", "rapidocr",
                    extra={"second_readings": {"gilt": [[0, "q", 0.3]]}})
    stage1.page_drafts(replay_page_job([region]), notation)  # the regions' readings replace the lines'
    assert notation.second_readings == {"gilt": [[0, "q", 0.3]]}


def test_a_crop_is_the_regions_box_with_a_margin_or_the_whole_page():
    image = Image.new("RGB", (200, 100))
    assert stage1.crop(image, (10, 10, 50, 30), 2.0, 4.0).size == (97, 57)
    assert stage1.crop(image, (500, 500, 600, 600), 2.0, 0.0).size == (200, 100)  # outside: the whole page
