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
