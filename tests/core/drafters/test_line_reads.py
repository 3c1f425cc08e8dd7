"""``ocr_pipeline.LineReads``: lines read by a pool's threads in order, yielded in order; held,
no line starts; closed, no further line starts and the lines read ahead are handed back."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from core import tuning
from core.drafters.ocr_pipeline import LineReads


class Gated:
    """Reads a "crop" (an int) as its text, after ``go`` is set; records the crops started and
    sets ``busy`` once ``count`` have started."""

    def __init__(self, count: int, fail_on=None):
        self.started: list[int] = []
        self.go, self.busy = threading.Event(), threading.Event()
        self.count, self.fail_on = count, fail_on
        self._lock = threading.Lock()

    def __call__(self, crops):
        with self._lock:
            self.started.append(crops[0])
            if len(self.started) >= self.count:
                self.busy.set()
        assert self.go.wait(tuning.PATIENCE_SECONDS)
        if crops[0] == self.fail_on:
            raise ValueError(f"line {crops[0]}")
        return [f"line {crops[0]}"]


@pytest.fixture
def pool():
    with ThreadPoolExecutor(2) as executor:
        yield executor


def test_lines_come_in_order(pool):
    read = Gated(1)
    read.go.set()
    assert list(LineReads(read, list(range(9)), pool, 2)) == [f"line {k}" for k in range(9)]
    assert sorted(read.started) == list(range(9))


def test_held_no_line_starts_and_closed_the_lines_read_ahead_come_back(pool):
    read = Gated(2)
    reads = LineReads(read, list(range(9)), pool, 2)
    assert read.busy.wait(tuning.PATIENCE_SECONDS)  # both threads have a line in hand
    reads.hold()
    read.go.set()
    ahead = reads.close()  # waits for the lines in hand
    assert ahead == {0: "line 0", 1: "line 1"} and sorted(read.started) == [0, 1]
    assert list(reads) == []  # nothing more comes once closed


def test_a_release_lets_the_threads_go_on(pool):
    read = Gated(2)
    reads = LineReads(read, list(range(6)), pool, 2)
    assert read.busy.wait(tuning.PATIENCE_SECONDS)
    reads.hold()
    reads.release()
    read.go.set()
    assert list(reads) == [f"line {k}" for k in range(6)]


def test_the_lines_taken_are_not_handed_back(pool):
    read = Gated(1)
    read.go.set()
    reads = LineReads(read, list(range(6)), pool, 2)
    assert [next(reads), next(reads)] == ["line 0", "line 1"]
    reads.hold()
    assert set(reads.close()) <= set(range(2, 6))


def test_a_read_that_raises_raises_where_its_line_comes(pool):
    read = Gated(1, fail_on=2)
    read.go.set()
    reads = LineReads(read, list(range(4)), pool, 2)
    assert [next(reads), next(reads)] == ["line 0", "line 1"]
    with pytest.raises(ValueError, match="line 2"):
        next(reads)
    assert next(reads) == "line 3"


class CountingPool:
    """A thread pool that counts the tasks handed to it (a ``LineReads`` hands it one a thread)."""

    def __init__(self, executor):
        self.executor, self.tasks = executor, 0

    def submit(self, task):
        self.tasks += 1
        return self.executor.submit(task)


@pytest.mark.parametrize("leave", [False, True])
def test_a_page_read_beside_its_decode_leaves_it_a_core_where_asked(monkeypatch, pool, leave):
    """``OCR_LEAVE_DECODE_CORE``: a page whose reading may be stopped (its decode runs meanwhile)
    is read on one thread fewer; a page drafted alone on all of them; never on none."""
    import numpy as np

    from core.drafters.ocr_pipeline import Detection, OcrPipeline

    monkeypatch.setattr(tuning, "OCR_LEAVE_DECODE_CORE", leave)
    pipeline = OcrPipeline(workers=2, squeeze_cjk=False)
    assert pipeline.read_workers(beside_decode=False) == 2
    assert pipeline.read_workers(beside_decode=True) == (1 if leave else 2)
    assert OcrPipeline(workers=1, squeeze_cjk=False).read_workers(beside_decode=True) == 1

    blank = Detection([], np.zeros((0, 4, 2)), np.zeros((0, 4, 2)), np.zeros((0, 4, 2)), (10, 10), (1.0, 1.0))
    counting = pipeline._pool = CountingPool(pool)
    read = Gated(1)
    read.go.set()
    pipeline._recogniser = SimpleNamespace(read=read)
    for stopped, threads in ((None, 2), (lambda: False, 1 if leave else 2)):
        pipeline.recognise(blank, stopped=stopped)  # the page: read beside a decode where stoppable
        counting.tasks = 0
        assert list(pipeline._read(list(range(5)))) == [f"line {k}" for k in range(5)]
        assert counting.tasks == threads
