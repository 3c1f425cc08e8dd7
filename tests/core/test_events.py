"""``core.events``: the run's plan says which pages this run converts."""

from __future__ import annotations

import dataclasses

import pytest

from core.events import EVENTS, DocumentPlanned


def test_the_pages_to_convert_are_the_run_s_pages_less_the_kept_ones_in_order():
    plan = DocumentPlanned(path="a.pdf", output="a.md", page_count=9, pages=(2, 3, 5, 7), kept=(3, 7))
    assert plan.to_convert == (2, 5)
    assert DocumentPlanned(path="a.pdf", output="a.md", page_count=2, pages=(1, 2)).to_convert == (1, 2)
    assert plan.damaged is None


def test_events_are_frozen_records():
    assert EVENTS and all(dataclasses.is_dataclass(cls) for cls in EVENTS)
    plan = DocumentPlanned(path="a.pdf", output="a.md", page_count=1, pages=(1,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.pages = (2,)
