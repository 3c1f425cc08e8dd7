"""Page, document, inspector and download states are enums that read as the words they stand for,
and no part of the app reaches into another object's private methods or attributes."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.document_state import DocumentState, DocumentStatus, PagePhase, PageRecord, PageState
from app.draft_inspector import InspectorState
from app.model_download import DownloadState
from app.worker import RunStatus

APP = Path(__file__).resolve().parents[2] / "app"


def _result(page, error=None):
    stats = None if error else SimpleNamespace(stop_reason="eos", generated_tokens=3, forward_passes=2, mode="hsd")
    return SimpleNamespace(page=page, error=error, stats=stats, regions=[], region_stats=[], figure_links={})


@pytest.mark.parametrize("enum", [PagePhase, PageState, DocumentStatus, InspectorState, DownloadState, RunStatus])
def test_every_state_is_written_and_read_back_as_the_word_it_stood_for(enum):
    for member in enum:
        assert json.loads(json.dumps({"state": member})) == {"state": member.value}
        assert enum(member.value) is member and f"{member}" == member.value


def test_the_words_stay_those_the_app_always_wrote():
    assert [s.value for s in PageState] == ["open", "queued", "not in range", "drafting", "drafted", "converting",
                                           "done", "warning", "failed", "partial"]
    assert [s.value for s in DocumentStatus] == ["open", "queued", "converting", "done", "cancelled", "failed"]
    assert {s.value for s in RunStatus} <= {s.value for s in DocumentStatus}  # a run's end is a document's status


def test_a_document_given_its_status_as_a_word_holds_the_enum():
    doc = DocumentState(Path("x.pdf"), 2, status="open")
    assert doc.status is DocumentStatus.OPEN
    with pytest.raises(ValueError):
        DocumentState(Path("x.pdf"), 1, status="finished")  # not a status: said at once, not later


def test_page_states_are_enums_from_the_record():
    from app.page_story import page_state

    doc = DocumentState(Path("x.pdf"), 4, status=DocumentStatus.CONVERTING, in_range=(1, 2, 3))
    doc.pages[1].finished(_result(1))
    doc.pages[2].drafting("textlayer", 0.0)
    states = [page_state(doc, n) for n in (1, 2, 3, 4)]
    assert states == [PageState.DONE, PageState.DRAFTING, PageState.QUEUED, PageState.NOT_IN_RANGE]
    assert all(type(s) is PageState for s in states)
    record = PageRecord(5)
    assert record.phase is PagePhase.UNTOUCHED and not record.phase  # untouched reads as nothing


def test_a_failed_new_run_gives_back_the_previous_pages_with_how_their_run_ended():
    doc = DocumentState(Path("x.pdf"), 1, status=DocumentStatus.CONVERTING)
    doc.pages[1].finished(_result(1))
    doc.status = doc.finished_status = DocumentStatus.CANCELLED
    doc.begin_run(None)
    assert not doc.results and doc.previous["status"] is DocumentStatus.CANCELLED
    assert doc.restore_previous()
    assert doc.status is DocumentStatus.CANCELLED and doc.finished_status is DocumentStatus.CANCELLED
    fresh = DocumentState(Path("y.pdf"), 1)
    fresh.pages[1].finished(_result(1))
    fresh.begin_run(None)
    assert fresh.previous["status"] is DocumentStatus.DONE  # a run whose end was never recorded finished


def test_no_part_of_the_app_calls_another_objects_private_names():
    """``window._show_text()`` from another module ties it to the window's insides: every name one
    object uses of another is public (``os._exit`` is the standard library's public name)."""
    reached = []
    for source in sorted(APP.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text("utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            if ast.unparse(node) == "os._exit":
                continue
            reached.append(f"{source.name}:{node.lineno}: {ast.unparse(node)}")
    assert reached == []
