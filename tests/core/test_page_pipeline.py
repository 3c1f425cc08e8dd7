"""A page before its decode: rendered and drafted (now or on a thread), timed, a drafter's crash
recorded, drafts handed over before they are done, and the record of a page that failed."""

from __future__ import annotations

import threading

import torch
from PIL import Image

from core import tuning
from core.drafters.background import DraftJob
from core.drafters.base import DrafterBase, Region
from core.errors import PageRangeError
from core.page_pipeline import PendingDrafts, drafter_name, failed_page, page_error, render_and_draft


class Page:
    width, height, number = 200.0, 300.0, 4

    def render(self, dpi):
        return Image.new("RGB", (int(200 * dpi / 72), int(300 * dpi / 72)), "white")


class Drafter(DrafterBase):
    name = "textlayer"

    def __init__(self, gate=None, fail=False):
        self.gate, self.fail = gate, fail

    def draft(self, page):
        if self.gate is not None:
            self.gate.wait(tuning.PATIENCE_SECONDS)
        if self.fail:
            raise RuntimeError("no text layer")
        return [Region("text", (10, 10, 190, 40), "Total revenue", "textlayer")]


def test_render_and_draft_now():
    page = render_and_draft(Page(), 144, Drafter())
    assert (page.number, page.width, page.height, page.image.size) == (4, 200.0, 300.0, (400, 600))
    assert page.drafts.done() and page.drafts.result()[0].text == "Total revenue"
    assert page.seconds["render"] > 0 and page.seconds["draft"] == page.drafts.seconds
    assert set(page.seconds) == {"render", "draft", "prefill", "verify", "total"}


def test_render_and_draft_on_a_thread():
    gate = threading.Event()
    page = render_and_draft(Page(), 72, Drafter(gate), background=True)
    assert not page.drafts.done() and page.seconds["draft"] == 0.0  # counted by the decode once in
    gate.set()
    assert page.drafts.result()[0].text == "Total revenue"


def test_a_drafter_crash_is_recorded_not_raised():
    page = render_and_draft(Page(), 72, Drafter(fail=True))
    assert page.drafts.result() == [] and page.drafts.error == "RuntimeError: no text layer"


def test_pending_drafts_are_the_job_once_delivered():
    pending = PendingDrafts()
    assert not pending.done() and pending.error is None and pending.seconds == 0.0
    job = DraftJob.finished([Region("text", (0, 0, 1, 1), "x", "t")], error=None, seconds=1.5)
    threading.Timer(0.05, pending.deliver, args=(job,)).start()
    assert pending.result() == job.result()  # waits for the delivery
    assert pending.done() and pending.seconds == 1.5


def test_auto_says_which_drafter_reads_the_page():
    from core.drafters.auto import AutoDrafter

    class Scan(Page):
        is_born_digital = False

    class Digital(Page):
        is_born_digital = True

    auto = AutoDrafter()
    assert drafter_name(auto, Scan()) == "rapidocr" and drafter_name(auto, Digital()) == "textlayer"
    assert drafter_name(Drafter(), Scan()) == "textlayer"


def test_failed_pages_say_why_in_one_line():
    assert page_error(PageRangeError("page 9 is outside the document")) == "page 9 is outside the document"
    assert page_error(ValueError("bad")) == "ValueError: bad"
    assert "out of GPU memory" in page_error(torch.OutOfMemoryError("CUDA out of memory"))
    result = failed_page(3, 100.0, 200.0, "hsd", "ValueError: bad")
    assert (result.page, result.markdown, result.error, result.stats.mode) == (3, "", "ValueError: bad", "hsd")
