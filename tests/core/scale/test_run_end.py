"""A Ray run's drafting tasks end early once their document's run has ended: nothing is cancelled
from the driver (``ClusterDrafter.close``); each task asks the run's end between its stages and
its chunks of lines and returns. Counted, never timed: the lines a task reads, the pages it drafts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core import tuning
from core.drafters import get_drafter
from core.drafters.base import DrafterBase, Region
from core.scale import drafting
from core.scale.drafting import RunEndedError, draft_on_worker
from tests.core.pdf_factory import text_pdf

OCR_SPEC = "rapidocr:layout=false"
LINES = 20


class EndAfter:
    """A run's end (``RunEnd``) as a task asks it, without Ray: its check says the run has ended
    from its ``calls``-th call on (counting from 1), and counts the calls."""

    def __init__(self, calls: int):
        self.calls, self.asked = calls, 0

    def check(self):
        def ended() -> bool:
            self.asked += 1
            return self.asked >= self.calls
        return ended


class CountingDrafter(DrafterBase):
    """Counts the pages it is asked to draft."""

    name = "counting"

    def __init__(self):
        self.drafted = 0

    def draft(self, page, on_lines=None):
        self.drafted += 1
        return [Region("text", (0, 0, 10, 10), "a line", self.name)]


def test_a_task_whose_run_has_ended_drafts_nothing(scale_inputs, monkeypatch):
    """A task that starts after its run's end (one queued behind the run's others) asks once the
    document is open and returns without drafting the page."""
    counting = CountingDrafter()
    monkeypatch.setitem(drafting._drafters, ("counting", 1), counting)
    path = scale_inputs[0]
    regions, _, error = draft_on_worker("counting", [path.read_bytes()], (path.name, None, "off", 0, 0), 1,
                                        EndAfter(1))
    assert isinstance(error, RunEndedError) and regions == [] and counting.drafted == 0
    regions, _, error = draft_on_worker("counting", [path.read_bytes()], (path.name, None, "off", 0, 0), 1, None)
    assert error is None and len(regions) == 1 and counting.drafted == 1  # no end told: drafted


@pytest.fixture(scope="module")
def long_page(tmp_path_factory) -> Path:
    lines = [f"Line {i + 1} of a long page that a stopped run no longer needs read." for i in range(LINES)]
    return text_pdf(tmp_path_factory.mktemp("long") / "long.pdf", lines, size=14, width=620, height=760)


def test_an_ocr_task_reads_no_further_line_once_its_run_has_ended(long_page):
    """The run ends while the task's OCR reads the page: the lines read are kept, no further one is
    read (the rest of the page is its layout, unread)."""
    data, where = [long_page.read_bytes()], (long_page.name, None, "off", 0, 0)
    whole, _, error = draft_on_worker(OCR_SPEC, data, where, 1, None)
    assert error is None
    read_whole = sum(r.text.count("Line ") for r in whole)  # a paragraph's lines joined
    assert read_whole >= LINES - 2
    # asked as the question goes out, once the document is open, before the first chunk of lines,
    # then after it: ended there
    end = EndAfter(4)
    stopped, _, error = draft_on_worker(OCR_SPEC, data, where, 1, end)
    assert error is None and end.asked >= 4
    read = sum(r.text.count("Line ") for r in stopped)
    assert 0 < read < read_whole and any(r.extra.get("unread") for r in stopped)
    again, _, _ = draft_on_worker(OCR_SPEC, data, where, 1, None)
    assert again == whole  # the worker's drafter reads its next page whole


class HeldLines(DrafterBase):
    """A long page's OCR as a task runs it (``RapidOCRDrafter.stop_when``): it reads its first line
    at once (and says so: the file ``reading-<page index>`` in ``folder``), then each further line
    once the stop check, asked before each line, has said no and the test lets it go, which this
    test never does: it waits until the check says stop (or the test's patience runs out). Without
    a check it reads every line at once."""

    name = "rapidocr"
    reads_ahead = True

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self._check = None

    def stop_when(self, stopped=None):
        self._check = stopped

    def draft(self, page, on_lines=None):
        (self.folder / f"reading-{page.index}").touch()
        read = []
        for i in range(LINES):
            if self._check is not None and self._check():
                break
            read.append(Region("text", (0, 10 * i, 90, 10 * i + 8), f"line {i + 1}", self.name))
            deadline = time.monotonic() + tuning.PATIENCE_SECONDS
            while self._check is not None and not self._check() and time.monotonic() < deadline:
                time.sleep(0.01)
        return read


def held_lines_task(folder: str):
    """``draft_on_worker`` as a Ray task whose worker drafts with ``HeldLines`` (under the spec
    "held-lines", which no other test's task asks for)."""
    import ray

    def draft(spec, data, where, cpus=1, end=None):
        from core.scale import drafting as on_worker

        on_worker._drafters[(spec, cpus)] = HeldLines(folder)
        try:
            return on_worker.draft_on_worker(spec, data, where, cpus, end)
        finally:
            on_worker._drafters.pop((spec, cpus), None)

    # two CPUs of the two the test's Ray has: one task at a time, the others queued behind it
    return ray.remote(draft).options(num_cpus=2, max_retries=0)


@pytest.mark.slow
@pytest.mark.usefixtures("workers_unpickle_this_module")
def test_a_closed_drafters_tasks_end_before_reading_their_pages(ray_local, scale_inputs, tmp_path):
    """A document's run ends while its first page's task reads and two more wait for CPUs: once
    the drafter is closed, the one reading stops after the line it read, and those that start
    after it read no further than their first line."""
    from core.documents import open_document
    from core.scale.drafting import ClusterDrafter, RunEnd, run_ends

    end = RunEnd(run_ends())
    drafter = ClusterDrafter("held-lines", get_drafter("textlayer"), window=3, task=held_lines_task(str(tmp_path)),
                             end=end)
    drafter.expect([0, 1, 2])
    with open_document(scale_inputs[0]) as document:
        first = drafter._send_from(document.page(0))
        references = [first, drafter._sent[1], drafter._sent[2]]
        deadline = time.monotonic() + tuning.PATIENCE_SECONDS
        while not (tmp_path / "reading-0").exists():
            assert time.monotonic() < deadline, "the first page's task never began"
            time.sleep(0.01)
        drafter.close()
    results = ray_local.get(references, timeout=tuning.PATIENCE_SECONDS)
    read = [len(regions) for regions, _, _ in results]
    assert read[0] == 1 and all(count <= 1 for count in read[1:]), read
    assert all(error is None or isinstance(error, RunEndedError) for _, _, error in results)
    assert ray_local.get(end.ends.ended.remote(end.key)) and not ray_local.get(end.ends.ended.remote("another"))
