"""Element-level reading (PaddleOCR-VL, GLM-OCR): every text region read on its crop, figures left
out, joined in reading order; ``ar`` reads greedily, the other modes verify the region's draft.
The losslessness of both on the real families is ``tests/core/targets/test_element_level.py``;
here the schedule itself, on the replay stand-in."""

from __future__ import annotations

import pytest
from PIL import Image

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.elements import decode_elements
from core.engine import EngineConfig
from core.events import RegionVerified, TextAppended
from core.page_job import PageImage, PageJob, PageRegions

READINGS = ["## Methods", "", "Samples were milled for five hours in argon and sieved twice.", "$E = mc^2$"]
REGIONS = [Region("title", (10, 10, 300, 30), "Methods", "rapidocr"),
           Region("figure", (10, 40, 300, 140), "", "rapidocr"),
           Region("text", (10, 150, 300, 200), "Samples were milled for five hours in argon and sieved.", "rapidocr"),
           Region("formula", (10, 210, 300, 240), "", "rapidocr")]


@pytest.fixture(scope="module")
def target():
    return ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))


def _read(target, mode, max_new_tokens=256, **config):
    events = []
    target.set_page("", READINGS)
    job = PageJob(EngineConfig(mode=mode, max_new_tokens=max_new_tokens, **config), target,
                  PageImage(Image.new("RGB", (320, 260), "white"), 1.0, 2),
                  PageRegions(DraftJob.finished(REGIONS), target.encode), emit=events.append)
    return job, decode_elements(job), events


@pytest.mark.parametrize("mode", ["ar", "hsd"])
def test_text_regions_are_read_in_order_and_figures_left_out(target, mode):
    job, page, events = _read(target, mode)
    expected = "\n\n".join(r for r in READINGS if r)
    assert page.text == expected and target.decode(page.tokens) == "".join(READINGS)  # the regions' ids
    assert job.regions.outputs == READINGS
    assert [e.region for e in events if isinstance(e, RegionVerified)] == [0, 2, 3]
    assert not job.regions[1].stats.verified and all(job.regions[i].stats.verified for i in (0, 2, 3))
    assert [(s.region, page.text[s.start:s.end]) for s in page.spans] == [(0, READINGS[0]), (2, READINGS[2]),
                                                                         (3, READINGS[3])]
    assert [e.text for e in events if isinstance(e, TextAppended)] == [expected]
    assert job.stats.stage2_passes == 0 and job.stats.stop_reason == "eos"


def test_drafts_save_passes_and_crops_are_prefilled_together(target):
    ar, _, _ = _read(target, "ar")
    hsd, _, _ = _read(target, "hsd")
    assert hsd.stats.stage1_passes < ar.stats.stage1_passes and hsd.stats.accepted_tokens > 0
    assert ar.stats.accepted_tokens == 0
    one_at_a_time, _, _ = _read(target, "hsd", stage1_batch=1)
    assert one_at_a_time.stats.prefill_passes == 3 and hsd.stats.prefill_passes == 1


def test_a_region_at_the_token_bound_marks_the_page(target):
    job, _, _ = _read(target, "ar", max_new_tokens=4)
    assert job.stats.stop_reason == "max_new_tokens"
