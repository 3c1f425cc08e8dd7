"""The inspector says which source drafted a region and why (a text layer that failed its check)."""

from core.drafters.base import Region
from core.results import PageResult, PageStats, RegionStats, TextSpan


def test_the_inspector_names_the_regions_source_and_why(qtbot):
    from app.document_state import PageRecord
    from app.draft_inspector import DraftInspector
    from app.page_story import region_story

    why = "OCR of the crop: text layer fails (alphabet shifted by +1 (a font's Unicode map out of step))"
    regions = [Region("title", (10, 10, 200, 40), "Title", "textlayer",
                      extra={"source_reason": "text layer: passed the check"}),
               Region("text", (10, 50, 300, 120), "Hello wrld, this is txt.", "rapidocr",
                      extra={"source_reason": why})]
    stats = [RegionStats(r.label, r.bbox, drafted_tokens=4, accepted_tokens=3, forward_passes=2) for r in regions]
    markdown = "# Title\n\nHello world, this is text."
    result = PageResult(page=1, width=400, height=500, markdown=markdown, regions=regions, region_stats=stats,
                        region_outputs=["# Title", "Hello world, this is text."],
                        spans=[TextSpan(0, 0, 7), TextSpan(None, 7, 9), TextSpan(1, 9, len(markdown))],
                        stats=PageStats(mode="hsd", forward_passes=9, generated_tokens=12, stage2_passes=6))
    record = PageRecord(1)
    record.finished(result)
    inspector = DraftInspector()
    qtbot.addWidget(inspector)
    inspector.show_story(region_story(record, 1, "hsd", running=False))
    assert "rapidocr: OCR of the crop: text layer fails (alphabet shifted by +1" in inspector.draft_label.text()
    inspector.show_story(region_story(record, 0, "hsd", running=False))
    assert "textlayer: text layer: passed the check" in inspector.draft_label.text()
