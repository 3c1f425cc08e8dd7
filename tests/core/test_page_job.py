"""A page's context for the stages: one record per region, drafts taken in when they arrive (and
after how many passes), the document's memory. On the replay stand-in."""

from __future__ import annotations

from core.drafters.background import DraftJob
from core.drafters.base import Region
from types import SimpleNamespace

from core import tuning
from core.events import TextAppended
from core.page_job import DocumentMemory, PageRegion, PageRegions, TextStream, joined_regions
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


def test_streamed_text_goes_out_at_once_then_at_most_so_often_and_the_rest_at_the_end(monkeypatch):
    """A pass's text is an event only once ``TEXT_EVENT_SECONDS`` have passed since the last one
    (a pass on a GPU is a few milliseconds); the first goes at once, ``flush`` sends what is left."""
    events: list = []
    job = SimpleNamespace(number=4, emit=events.append,
                          target=SimpleNamespace(decode=lambda tokens: "".join(chr(97 + t) for t in tokens)))
    row = SimpleNamespace(output=[])
    monkeypatch.setattr(tuning, "TEXT_EVENT_SECONDS", 3600.0)
    stream = TextStream(job)
    for token in range(4):  # four passes, a token each
        row.output.append(token)
        stream.push(row)
    assert events == [TextAppended(page=4, text="a")]
    stream.flush(row)
    assert events == [TextAppended(page=4, text="a"), TextAppended(page=4, text="bcd")]
    stream.flush(row)  # nothing new
    assert len(events) == 2

    monkeypatch.setattr(tuning, "TEXT_EVENT_SECONDS", 0.0)
    events.clear()
    stream, row.output = TextStream(job), []
    for token in range(3):
        row.output.append(token)
        stream.push(row)
    assert [e.text for e in events] == ["a", "b", "c"]
