"""A page's context for the stages: one record per region, drafts taken in when they arrive (and
after how many passes), the document's memory. On the replay stand-in."""

from __future__ import annotations

from core.drafters.background import DraftJob
from core.drafters.base import Region
from core.page_job import DocumentMemory, PageRegion, PageRegions, joined_regions
from core.page_pipeline import PendingDrafts
from tests.core.replay_job import replay_page_job, replay_target

TEXT = "Revenue  grew by 12 % in the second quarter."


def test_a_region_record_holds_its_draft_in_tokens_and_text():
    target = replay_target()
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
    regions = PageRegions(pending, replay_target().encode)
    assert not regions.poll(3) and len(regions) == 0 and regions.regions == []
    pending.deliver(DraftJob.finished([Region("text", (0, 0, 1, 1), TEXT, "t")]))
    assert regions.poll(7) and not regions.poll(9)
    assert regions.arrived_after == 7 and [r.text for r in regions.regions] == [TEXT]
    regions.wait(12)
    assert regions.arrived_after == 7


def test_the_document_memory_is_shared_or_the_page_learns_alone():
    job = replay_page_job([])
    assert job.history is None and job.notation() is not job.notation()
    memory = DocumentMemory.new("doc.pdf", 10)
    job.memory = memory
    assert job.notation() is memory.notation and job.history is memory.history


def test_joined_regions():
    text, spans = joined_regions(["Title", "", "Body"])
    assert text == "Title\n\nBody"
    assert [(s.region, text[s.start:s.end]) for s in spans] == [(0, "Title"), (2, "Body")]
