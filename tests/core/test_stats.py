"""``core.stats``: a document's totals count failed pages apart, and durations read as people say them."""

from __future__ import annotations

from core.results import PageResult, PageStats, page_seconds
from core.stats import document_stats, document_totals, format_duration


def _page(number, passes, tokens, stage2=0, error=None, total=1.0):
    stats = PageStats(mode="hsd", forward_passes=passes, prefill_passes=1, stage2_passes=stage2,
                      stage1_passes=passes - stage2 - 1, generated_tokens=tokens, seconds=page_seconds(total=total))
    return PageResult(number, 100.0, 100.0, f"page {number}", [], [], [], [], stats, error=error)


def test_totals_add_up_the_pages_that_converted_and_list_the_failed():
    pages = [_page(1, 11, 40, stage2=10), _page(2, 0, 0, error="RuntimeError: x"), _page(3, 6, 20, stage2=0)]
    totals = document_totals(pages)
    assert totals["pages"] == 3 and totals["failed_pages"] == [2]
    assert totals["forward_passes"] == 17 and totals["prefill_passes"] == 2 and totals["generated_tokens"] == 60
    # decoding passes: Stage 2's where the page had them, else Stage 1's (10 + 5)
    assert totals["mean_accepted_length"] == round(60 / 15, 4)
    assert totals["seconds"]["total"] == 2.0 and set(totals["seconds"]) >= {"render", "draft", "verify"}
    assert document_totals([])["mean_accepted_length"] == 0.0


def test_a_stats_file_keeps_every_page_without_its_markdown():
    stats = document_stats("in.pdf", "out.md", {"mode": "hsd"}, [_page(1, 3, 9, stage2=2)])
    assert stats["file"] == "in.pdf" and stats["output"] == "out.md" and stats["settings"] == {"mode": "hsd"}
    assert [p["page"] for p in stats["pages"]] == [1] and "markdown" not in stats["pages"][0]


def test_durations():
    assert [format_duration(s) for s in (-3, 0.4, 42, 59.6, 185, 3599, 3720, 90000)] == [
        "0 s", "0 s", "42 s", "1 min 00 s", "3 min 05 s", "59 min 59 s", "1 h 02 min", "25 h 00 min"]
