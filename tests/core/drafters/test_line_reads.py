"""``ocr_pipeline.LineReads``: lines read by a pool's threads in order, yielded in order; held,
no line starts; closed, no further line starts and the lines read ahead are handed back."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

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
