"""Python's cycle collector runs on the GUI thread only (``app.cycle_collector``): a cycle the GUI
left behind is never freed on a conversion's thread, where freeing a widget hangs or crashes the app."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from app.cycle_collector import GuiThreadCollector, due_generation
from tests.app.conftest import PATIENCE_MS


class _Cycle:
    def __init__(self):
        self.me = self


def _garbage_cycle(freed_on: list) -> None:
    """A cycle, already garbage, that records the thread it is freed on."""
    gc.collect()  # every count back to zero: nothing is due before the thread allocates
    cycle = _Cycle()
    weakref.finalize(cycle, lambda: freed_on.append(threading.current_thread().name))


def _allocate_on_a_thread(kept: list) -> None:
    """A conversion's thread allocating (and keeping) container objects, as loading a model does:
    enough for Python to collect the youngest generation several times over."""
    thread = threading.Thread(target=lambda: kept.extend([] for _ in range(20_000)), name="conversion")
    thread.start()
    thread.join()


@pytest.mark.own_cycle_collection
def test_a_cycle_left_by_the_gui_is_freed_on_the_gui_thread_not_on_a_conversions(qtbot):
    freed_on, kept = [], []
    _garbage_cycle(freed_on)
    _allocate_on_a_thread(kept)
    assert freed_on == ["conversion"]  # Python's own collection: on whichever thread allocates

    collector = GuiThreadCollector(interval_ms=20)
    collector.start()
    try:
        freed_on, kept = [], []
        _garbage_cycle(freed_on)
        _allocate_on_a_thread(kept)
        assert freed_on == [] and not gc.isenabled()
        qtbot.waitUntil(lambda: bool(freed_on), timeout=PATIENCE_MS)  # the collector's timer, on this thread
        assert freed_on == [threading.current_thread().name]
    finally:
        collector.stop()
    assert gc.isenabled()


@pytest.mark.own_cycle_collection
def test_the_apps_application_collects_on_its_own_thread(qapp):
    from app.main import application

    assert application() is qapp and application() is qapp
    collectors = qapp.findChildren(GuiThreadCollector)
    try:
        assert len(collectors) == 1 and collectors[0].active and not gc.isenabled()
    finally:
        for collector in collectors:
            collector.stop()
            collector.setParent(None)
    assert gc.isenabled()


@pytest.mark.parametrize(("counts", "due"), [
    ((0, 0, 0), None), ((700, 10, 10), None),  # a count must pass its threshold, as in Python
    ((701, 0, 0), 0), ((701, 11, 0), 1), ((3, 11, 11), 2),  # the oldest due generation
])
def test_the_due_generation_is_the_oldest_past_its_threshold(counts, due):
    assert due_generation(counts, (700, 10, 10)) == due


def test_a_threshold_of_zero_collects_nothing():
    assert due_generation((10**6, 10**6, 10**6), (0, 0, 0)) is None  # gc.set_threshold(0): collection off
