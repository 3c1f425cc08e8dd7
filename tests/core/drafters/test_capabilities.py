"""What a drafter can do is declared (``core.drafters.base.Drafter``), with ``DrafterBase``'s defaults:
every drafter the registry builds, and the drafting process's, has every member, so nothing reads a
drafter's capabilities by ``getattr``."""

from __future__ import annotations

import importlib

import pytest

from core.drafters import _DRAFTERS, DRAFTER_NAMES, get_drafter
from core.drafters.base import Drafter, DrafterBase, Region, draft_page
from core.drafters.process import ProcessDrafter


def declared() -> set[str]:
    """The members ``Drafter`` declares: data members by annotation, methods by definition."""
    return set(Drafter.__annotations__) | {name for name, value in vars(Drafter).items()
                                           if callable(value) and not name.startswith("_")}


def test_the_protocol_names_what_is_read_of_a_drafter():
    assert declared() >= {"name", "streams_lines", "drafts_elsewhere", "reads_ahead", "spec", "last_step", "prepare",
                          "choose", "draft"}


@pytest.mark.parametrize("name", DRAFTER_NAMES)
def test_every_registered_drafter_declares_every_capability(name):
    module, cls = _DRAFTERS[name]
    drafter_class = getattr(importlib.import_module(module), cls)
    assert issubclass(drafter_class, DrafterBase)
    missing = sorted(member for member in declared() if not hasattr(drafter_class, member) and member != "name")
    assert not missing, f"{cls} lacks {missing}"


@pytest.mark.parametrize("spec", ["auto", "textlayer", "rapidocr:layout=false"])
def test_a_built_drafter_is_a_drafter_with_its_spec(spec):
    drafter = get_drafter(spec)
    assert isinstance(drafter, Drafter) and drafter.name == spec.split(":")[0]
    assert drafter.spec == spec and not drafter.drafts_elsewhere
    assert ProcessDrafter(spec).drafts_elsewhere and isinstance(ProcessDrafter(spec), Drafter)


class Plain(DrafterBase):
    """A drafter that declares nothing but its name and ``draft``."""

    name = "plain"

    def __init__(self):
        self.asked = []

    def draft(self, page):
        self.asked.append(page)
        return [Region("text", (0, 0, 1, 1), f"page {page}", "plain")]


def test_the_defaults_read_here_whole_with_nothing_to_load():
    drafter = Plain()
    assert (drafter.streams_lines, drafter.drafts_elsewhere, drafter.reads_ahead, drafter.spec,
            drafter.last_step) == (False, False, False, None, None)
    assert drafter.prepare(1) is None and drafter.choose(1) is drafter
    order = []
    lines = []
    regions = draft_page(drafter, 7, on_lines=lines.extend, meanwhile=lambda: order.append("meanwhile"))
    assert order == ["meanwhile"] and drafter.asked == [7] and lines == []  # no lines from a drafter that streams none
    assert regions[0].text == "page 7"
