"""A page result survives the resume folder whole: its token ids too, so a resumed run drafts the later
pages from exactly what an uninterrupted run would; ids that are not ids are dropped, never trusted."""

from __future__ import annotations

import json

from core.results import PageResult, PageStats


def _result(tokens) -> PageResult:
    return PageResult(page=2, width=100.0, height=200.0, markdown="# Title\n\ntext", regions=[],
                      region_stats=[], region_outputs=[], spans=[], stats=PageStats(mode="hsd"),
                      output_tokens=tokens)


def test_token_ids_round_trip_through_json():
    data = json.loads(json.dumps(_result([5, 0, 77, 120020]).to_dict()))
    assert PageResult.from_dict(data).output_tokens == [5, 0, 77, 120020]


def test_ids_that_are_not_ids_are_dropped():
    for bad in ([1, -2], [1, 2.5], ["3"], [True], "123", None, {"a": 1}):
        data = _result([]).to_dict()
        data["output_tokens"] = bad
        assert PageResult.from_dict(data).output_tokens == []


def test_a_page_saved_without_ids_still_loads():
    data = _result([1, 2]).to_dict()
    del data["output_tokens"]
    assert PageResult.from_dict(data).output_tokens == []
