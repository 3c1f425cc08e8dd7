"""A finished document as ``hsd convert`` leaves it (Markdown, figures folder, resume folder), written
through the same ``DocumentOutput`` a run saves pages with: no model needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.drafters.base import Region
from core.results import PageResult, PageStats, RegionStats, TextSpan

PAGE_ONE = """# Results of the study

The mean is $\\bar{x} = \\frac{1}{n}\\sum_{i=1}^{n} x_i$ over **all** samples.

- first finding
- second finding

| Group | Score |
|---|--:|
| A | 12 |
| B | 15 |

$$E = mc^2$$"""

PAGE_TWO = """## Discussion

<table><tr><th>Item</th><th>Value</th></tr><tr><td>width</td><td>$\\pm 3$ mm</td></tr></table>

Plain words <b>close</b> the page: 3 < 4 and a & b."""


def _result(page: int, markdown: str, regions: list[Region]) -> PageResult:
    stats = [RegionStats(r.label, r.bbox, drafted_tokens=10, accepted_tokens=7 + i, forward_passes=2,
                         output_tokens=9, verified=r.label != "figure") for i, r in enumerate(regions)]
    return PageResult(page=page, width=200.0, height=300.0, markdown=markdown, regions=regions,
                      region_stats=stats, region_outputs=[r.text for r in regions],
                      spans=[TextSpan(0, 0, len(markdown))], stats=PageStats(mode="hsd", stop_reason="eos"))


def make_finished(folder: Path, name: str = "study") -> Path:
    """``folder/NAME.md`` converted from a two-page input: page 1 has a figure region."""
    from PIL import Image

    from core.export import DocumentOutput

    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{name}.pdf"
    source.write_bytes(b"%PDF-1.4 a stand-in input: only its bytes are fingerprinted\n")
    one = _result(1, PAGE_ONE, [
        Region("text", (10, 10, 190, 60), "Results of the study The mean is over all samples.", "textlayer"),
        Region("figure", (20, 150, 120, 250), "", "textlayer"),
        Region("text", (10, 260, 190, 290), "first finding second finding Group Score A 12 B 15", "textlayer")])
    two = _result(2, PAGE_TWO, [
        Region("text", (10, 10, 190, 100), "Discussion Item Value width 3 mm Plain words close the page",
               "textlayer")])
    output = DocumentOutput(source, folder / f"{name}.md", {"model": "test", "mode": "hsd"})
    image = Image.new("RGB", (400, 600), "white")
    image.paste((200, 30, 30), (40, 300, 240, 500))
    output.save_page(one, image)
    output.save_page(two, None)
    return output.write_markdown([one, two])


@pytest.fixture
def finished(tmp_path) -> Path:
    return make_finished(tmp_path / "converted")
