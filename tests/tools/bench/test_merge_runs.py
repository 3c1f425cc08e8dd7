"""One report from benchmark runs over disjoint parts of a corpus (``tools.bench.merge_runs``)."""

import json

import pytest

from tests.core.bench.test_report import _page, _result
from tools.bench.merge_runs import main, merge_results


def test_merge_rejects_overlap_and_orders_pages():
    a = _result([_page("b", 1, 11, 5, 6)])
    b = _result([_page("a", 1, 11, 5, 6)], methods=("ar", "page", "hsd"))
    merged = merge_results([a, b])
    assert [p["doc"] for p in merged["pages"]] == ["a", "b"]
    assert merged["info"]["methods"] == ["ar", "page", "hsd"]
    with pytest.raises(ValueError):
        merge_results([a, a])


def test_an_unfinished_run_merges_from_its_pages_file(tmp_path):
    a = _result([_page("b", 1, 11, 5, 6)], methods=("ar", "page", "hsd"))
    (tmp_path / "a.json").write_text(json.dumps(a), encoding="utf-8")
    lines = [{"info": a["info"]}, _page("a", 1, 11, 5, 6)]
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    assert main([str(tmp_path / "out"), str(tmp_path / "a.json"), str(tmp_path / "b.jsonl")]) == 0
    merged = json.loads((tmp_path / "out" / "bench.json").read_text(encoding="utf-8"))
    assert [(p["doc"], p["page"]) for p in merged["pages"]] == [("a", 1), ("b", 1)]
    assert (tmp_path / "out" / "report.md").is_file()
