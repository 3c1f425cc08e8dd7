"""The stages as schedules over one page (``core.engine.schedule``): each mode returns one
``PageDecode`` record (output ids, text, which region wrote what) with its counters in the job's
statistics. On the replay stand-in, whose greedy output is a reference text and whose passes take
no time."""

from __future__ import annotations

import pytest
from PIL import Image

from core import stage1
from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.engine import EngineConfig, schedule
from core.events import RegionVerified, TextAppended
from core.page_job import PageImage, PageJob, PageRegions
from core.page_pipeline import PendingDrafts

PARAGRAPHS = ["# Results", "Revenue grew by twelve percent in the second quarter of the year, and costs fell.",
              "The board proposes a dividend of forty cents per share, payable in March."]
REF = "\n\n".join(PARAGRAPHS)


@pytest.fixture(scope="module")
def target():
    return ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))


def _regions(texts=PARAGRAPHS):
    return [Region("title" if i == 0 else "text", (10, 10 + 60 * i, 400, 60 + 60 * i), t, "rapidocr")
            for i, t in enumerate(texts)]


def _job(target, mode, regions, events=None, **config) -> PageJob:
    target.set_page(REF, PARAGRAPHS)
    drafting = DraftJob.finished(regions) if isinstance(regions, list) else regions
    job = PageJob(EngineConfig(mode=mode, max_new_tokens=1024, **config), target,
                  PageImage(Image.new("RGB", (420, 240), "white"), 1.0, 1), PageRegions(drafting, target.encode),
                  emit=(events.append if events is not None else None))
    job.regions.poll(0)
    return job


def test_ar_decodes_the_page_one_token_a_pass(target):
    job = _job(target, "ar", [])
    page = schedule(job)
    assert page.text == REF and page.tokens == target.encode(REF)
    assert job.stats.stage2_passes == len(page.tokens) and job.stats.prefill_passes == 1
    assert job.stats.accepted_tokens == 0 and job.stats.stop_reason == "eos"
    assert [(s.region, s.start, s.end) for s in page.spans] == [(None, 0, len(REF))]


def test_page_mode_takes_the_drafts_and_credits_the_regions(target):
    job = _job(target, "page", _regions())
    page = schedule(job)
    assert page.text == REF and job.stats.stage2_passes < len(page.tokens) // 4
    assert job.stats.accepted_tokens > 0 and job.stats.stage1_passes == 0
    assert 0 < sum(r.stats.page_accepted_tokens for r in job.regions) <= job.stats.accepted_tokens
    assert {s.region for s in page.spans} & {0, 1, 2}
    assert "".join(page.text[s.start:s.end] for s in page.spans) == REF  # every character, once


def test_hsd_reads_the_regions_beside_the_page_and_streams_its_text(target):
    events = []
    job = _job(target, "hsd", _regions([p.replace("twelve", "12") for p in PARAGRAPHS]), events)
    page = schedule(job)
    assert page.text == REF
    assert "".join(e.text for e in events if isinstance(e, TextAppended)) == REF
    assert job.stats.prefill_passes >= 2  # the page, then the crops
    read = [e.region for e in events if isinstance(e, RegionVerified)]
    assert read and all(job.regions[i].stats.verified and job.regions[i].output for i in read)


def test_hsd_without_drafts_yet_decodes_and_takes_them_when_they_come(target):
    pending, checks = PendingDrafts(), {"n": 0}

    def should_cancel():  # asked before every pass: the drafter delivers before the 10th
        checks["n"] += 1
        if checks["n"] == 10:
            pending.deliver(DraftJob.finished(_regions()))
        return False

    job = _job(target, "hsd", pending)
    job.should_cancel = should_cancel
    page = schedule(job)
    assert page.text == REF and job.regions.ready and 8 <= job.regions.arrived_after <= 11


def test_regions_mode_joins_the_region_readings(target):
    events = []
    job = _job(target, "regions", _regions(), events)
    page = schedule(job)
    assert page.text == REF and job.stats.stage2_passes == 0 and job.stats.stage1_passes > 0
    assert job.regions.outputs == PARAGRAPHS
    assert [(s.region, page.text[s.start:s.end]) for s in page.spans] == list(enumerate(PARAGRAPHS))
    assert [e.text for e in events if isinstance(e, TextAppended)] == [REF]


def test_lines_read_before_the_regions_are_handed_over_once_and_again_after_a_restart(target):
    """The lines come as one text, only when more have come; a page attempt started over (out of
    memory) is handed them again; the regions, once delivered, take over."""
    pending = PendingDrafts()
    pending.lines.extend(["Revenue grew by twelve percent in the", "second quarter of the year."])
    job = _job(target, "hsd", pending)
    assert job.regions.early_text(0) == "Revenue grew by twelve percent in the\nsecond quarter of the year."
    assert job.regions.early_text(3) is None and job.regions.lines_after == 0
    stage1.reset(job)
    assert job.regions.early_text(5).startswith("Revenue grew") and job.regions.lines_after == 0
    pending.deliver(DraftJob.finished(_regions()))
    page = schedule(job)
    assert page.text == REF and job.regions.ready and job.regions.early_text(9) is None


def test_a_page_started_over_for_memory_counts_its_lines_read_once(target, monkeypatch):
    """Lines and regions read by an attempt abandoned for memory are read again by the next: the
    page's counts are the last attempt's."""
    import torch

    real_run, attempts = stage1.Stage1Scheduler.run, []

    def run_once_out_of_memory(self):
        attempts.append(self.batch)
        if len(attempts) == 1:
            self.job.stats.lines_read += 3  # what the abandoned attempt had read
            self.job.stats.regions_read_by_lines += 1
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real_run(self)

    monkeypatch.setattr(stage1.Stage1Scheduler, "run", run_once_out_of_memory)
    job = _job(target, "hsd", _regions(), stage1_batch=4)
    page = schedule(job)
    assert page.text == REF and attempts == [4, 2]
    assert job.stats.lines_read == 0 and job.stats.regions_read_by_lines == 0  # regions at once: no lines
