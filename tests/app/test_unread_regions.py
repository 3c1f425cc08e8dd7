"""A region whose text the OCR did not read (its page's decode ended first: ``extra["unread"]``) is
shown as not read, not as an empty or rejected draft: in the overlay's tooltip and the inspector."""

from core.drafters.base import Region
from core.drafters.ocr_layout import UNREAD, unread_regions
from core.results import PageResult, PageStats, RegionStats


def _record():
    from app.document_state import PageRecord

    regions = unread_regions([("title", (10, 10, 200, 40)), ("text", (10, 50, 300, 120))], "rapidocr")
    regions.append(Region("text", (10, 130, 300, 160), "", "rapidocr"))  # read, and empty
    stats = [RegionStats(r.label, r.bbox) for r in regions]
    markdown = "# Title\n\nHello world, this is text."
    result = PageResult(page=1, width=400, height=500, markdown=markdown, regions=regions, region_stats=stats,
                        region_outputs=["", "", ""], spans=[],
                        stats=PageStats(mode="hsd", forward_passes=30, generated_tokens=29, stage2_passes=30))
    record = PageRecord(1)
    record.finished(result)
    return record


def test_the_overlay_says_a_region_was_not_read():
    from app.page_view import region_rate, region_tooltip

    record = _record()
    unread, empty = record.regions[1], record.regions[2]
    stats = record.region_stats
    assert unread.extra["unread"] == UNREAD and region_rate(stats[1]) is None
    assert "not read: the page's decode ended before the OCR reached it" in region_tooltip(1, unread, stats[1])
    assert "the draft was empty" in region_tooltip(2, empty, stats[2])


def test_the_inspector_says_a_region_was_not_read(qtbot):
    from app.draft_inspector import DraftInspector
    from app.page_story import region_story

    inspector = DraftInspector()
    qtbot.addWidget(inspector)
    inspector.show_story(region_story(_record(), 1, "hsd", running=False))
    assert "not read" in inspector.header.text() and "text not read" in inspector.draft_view.toPlainText()
    inspector.show_story(region_story(_record(), 2, "hsd", running=False))
    assert "empty draft" in inspector.draft_view.toPlainText()
