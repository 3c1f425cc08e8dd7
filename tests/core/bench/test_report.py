import pytest

from core.bench.report import aggregate, markdown_report


def _page(doc, page, ar, hsd, page_fp, kind="k", regions=3, oracle=None):
    def m(fp, gen=100, s2=None, wall=1.0):
        return {"forward_passes": fp, "decode_passes": fp - 1, "stage2_passes": s2 or fp - 1, "generated_tokens": gen,
                "mean_accepted_length": gen / (s2 or fp - 1), "wall_seconds": wall, "edit_distance": 0.0, "teds": None,
                "gains": {1: 2}}
    methods = {"ar": m(ar, s2=ar - 1, wall=2.0), "page": m(page_fp), "hsd": m(hsd, wall=1.0)}
    if oracle:
        methods["hsd-oracle"] = m(oracle)
    return {"doc": doc, "kind": kind, "page": page, "pages": 1, "regions": regions, "reference_chars": 100 * ar,
            "reference_tokens": ar - 1, "drafts": {"edit_distance": 0.1, "teds": None}, "methods": methods}


def _result(pages, methods=("ar", "page", "hsd", "hsd-oracle")):
    return {"info": {"methods": list(methods), "target": "replay-cost", "target_detail": "t", "tokenizer": "x",
                     "drafter": "d", "corpus": "/c", "started": "now", "machine": {}}, "pages": pages}


def test_aggregates_count_every_page_and_check_targets():
    pages = [_page("a", 1, 101, 21, 41, oracle=11), _page("b", 1, 1001, 101, 201, oracle=51, kind="j"),
             _page("b", 2, 11, 11, 11, oracle=11, kind="j", regions=1)]
    agg = aggregate(_result(pages))
    hsd = agg["overall"]["hsd"]
    assert hsd["pages"] == 3
    assert hsd["fp_speedup_mean"] == pytest.approx((101 / 21 + 1001 / 101 + 1) / 3)
    assert hsd["fp_speedup_total"] == pytest.approx(1113 / 133)
    assert agg["longest_documents"]["documents"] == ["b"]
    t = agg["targets"]
    assert t["fp_speedup_longest"]["value"] == pytest.approx(1012 / 112)
    assert t["hsd_over_page"]["met"] is True
    assert t["wall_wins_multi_region"]["value"] == "2/2"
    report = markdown_report(_result(pages), agg)
    assert "| a | 1 |" in report and "## Targets" in report


def _timed(doc, page, ar_fp, hsd_fp, runs=None, charged=0.0, kind="k"):
    rec = _page(doc, page, ar_fp, hsd_fp, ar_fp, kind=kind)
    rec["methods"]["hsd"]["charged_draft_seconds"] = charged
    if runs:
        rec["document_run_seconds"] = runs
    return rec


def test_documents_end_to_end_beside_their_pass_speed_up():
    """A document's seconds are its run's, drafting charged where it was handed first; the set's
    ratios are of the sums; the target reads the documents of several pages."""
    pages = [_timed("a", 1, 101, 21, runs={"ar": 10.0, "page": 9.0, "hsd": 4.0}, charged=1.0),
             _timed("a", 2, 201, 41, charged=0.5),
             _timed("b", 1, 51, 11, runs={"ar": 5.0, "page": 5.0, "hsd": 5.0})]
    result = _result(pages, methods=("ar", "page", "hsd"))
    agg = aggregate(result)
    e2e = agg["end_to_end"]
    a = e2e["per_document"]["a"]
    assert a["pages"] == 2 and a["seconds"]["hsd"] == pytest.approx(5.5) and a["seconds"]["ar"] == 10.0
    hsd_a = a["methods"]["hsd"]
    assert hsd_a["end_to_end_speedup"] == pytest.approx(10.0 / 5.5)
    assert hsd_a["pass_speedup"] == pytest.approx(302 / 62)
    assert hsd_a["over_passes"] == pytest.approx((10.0 / 5.5) / (302 / 62))
    assert hsd_a["markdown_speedup"] == pytest.approx(4.0 / 2.0)  # the pages' wall-clock: ar 2 s, hsd 1 s each
    whole = e2e["set"]["hsd"]
    assert whole["documents"] == 2 and whole["pages"] == 3
    assert whole["end_to_end_speedup"] == pytest.approx(15.0 / 10.5) and whole["pass_speedup"] == pytest.approx(353 / 73)
    assert e2e["multi_page"]["hsd"]["documents"] == 1
    target = agg["targets"]["end_to_end_over_passes"]
    assert target["value"] == pytest.approx(hsd_a["over_passes"]) and target["met"] is False
    report = markdown_report(result, agg)
    assert "## Documents end to end" in report
    assert f"| a | 2 | hsd | 10.0 | 5.5 | {10.0 / 5.5:.2f}x | {302 / 62:.2f}x |" in report
    assert "| **set** (2) | 3 | hsd | 15.0 | 10.5 |" in report and "documents of several pages** (1)" in report


def test_end_to_end_without_a_run_s_seconds_adds_its_pages_and_replay_is_not_judged():
    pages = [_page("b", 1, 11, 6, 11), _page("b", 2, 11, 6, 11)]
    result = _result(pages, methods=("ar", "page", "hsd"))
    agg = aggregate(result)
    assert agg["end_to_end"]["per_document"]["b"]["methods"]["hsd"]["end_to_end_speedup"] == pytest.approx(2.0)
    assert agg["targets"]["end_to_end_over_passes"]["value"] == pytest.approx(2.0 / (22 / 12))
    result["info"]["target"] = "replay"  # its clock reads the engine's Python alone
    agg = aggregate(result)
    assert agg["targets"]["end_to_end_over_passes"]["met"] is None
    assert "## Documents end to end" not in markdown_report(result, agg)
