"""A chart drawn in vectors is one figure region, its labels with it (text-layer pages).

A line or bar chart's tick labels, legend and axis titles are text-layer lines like any other, and
each became a region of its own: a chart of a research report was 26 ``figure`` regions of one
tick label each (export cut 26 crops of 33 x 17 px). Here the page's vector drawings are grouped
into graphics (paths within ``tuning.CHART_PATH_GAP`` of each other); a graphic that plots
something (a slanted or curved stroke: a line chart's polyline; or ``tuning.CHART_MIN_BARS``
coloured filled rectangles: bars) and has ``tuning.AXIS_TICK_RUN`` tick-like labels beside it
becomes one figure region: its box, its ticks and the short regions (``tuning.CHART_LABEL_CHARS``
characters at most: a legend, an axis title) next to them (``merge_charts``). A ruled table, whose
strokes are all level or upright, is not a graphic that plots; a caption, a table or running text
is never taken in. Figure regions smaller than ``tuning.CHART_TINY_AREA`` of the page that stand
within the reach of another figure region are absorbed into it.
"""

from __future__ import annotations

import re

import pymupdf

from core import tuning
from core.drafters.base import Region
from core.drafters.layout import union_box

_TICK = re.compile(r"^[-+−]?[\d.,]+\s*[%x×]?$|^\d{2,4}([-/.]\d{1,2}){0,2}[A-Za-z]?$|^\d{1,2}[A-Z]?$|^[A-Z]?\d{1,2}$")
#: Labels that a chart may take in (never tables, captions, formulas, code, headers or footers).
_TAKEN = ("text", "figure", "title", "list", "page_number")


def graphics(fitz_page: pymupdf.Page, matrix: pymupdf.Matrix) -> list[tuple[tuple, bool]]:
    """(box in the frame ``matrix`` takes the unrotated page to, whether it plots something) of
    each group of the page's visible drawings, white fills and page-sized backgrounds left out."""
    try:
        paths = fitz_page.get_cdrawings()
    except Exception:
        return []
    if len(paths) > tuning.CHART_MAX_PATHS:
        return []  # a vector map or a drawing: grouping its paths would cost seconds
    page_area = abs(fitz_page.rect) or 1.0
    items: list[tuple[pymupdf.Rect, bool, bool]] = []  # (box, slanted or curved stroke, coloured bar)
    for path in paths:
        rect = pymupdf.Rect(path["rect"]) * matrix
        if abs(rect) > tuning.CHART_MAX_PATH_SHARE * page_area:
            continue  # a background or a frame around the page
        fill, stroke = path.get("fill"), path.get("color")
        if stroke is None and (fill is None or min(fill) >= 0.97):
            continue  # invisible: a white box behind text
        plots = any(item[0] == "c" or (item[0] == "l" and _slanted(item[1], item[2])) for item in path["items"])
        bar = fill is not None and max(fill) - min(fill) > 0.1 and all(item[0] in ("re", "qu") for item in path["items"])
        items.append((rect, plots, bar))
    groups: list[list] = []  # [box, plots, bars]
    gap = tuning.CHART_PATH_GAP
    for rect, plots, bar in sorted(items, key=lambda it: (it[0].y0, it[0].x0)):
        grown = pymupdf.Rect(rect.x0 - gap, rect.y0 - gap, rect.x1 + gap, rect.y1 + gap)
        joined = [g for g in groups if grown.intersects(g[0]) or _touches(grown, g[0])]
        box, count_plots, bars = pymupdf.Rect(rect), plots, int(bar)
        for g in joined:
            box |= g[0]
            count_plots = count_plots or g[1]
            bars += g[2]
            groups.remove(g)
        groups.append([box, count_plots, bars])
    out = []
    for box, plots, bars in groups:
        if min(box.width, box.height) < tuning.CHART_MIN_SIDE:
            continue  # a rule, an underline, a thin band
        out.append((tuple(box), plots or bars >= tuning.CHART_MIN_BARS))
    return out


def _slanted(p, q) -> bool:
    dx, dy = abs(q[0] - p[0]), abs(q[1] - p[1])
    return min(dx, dy) > 0.05 * max(dx, dy) and max(dx, dy) > 0.2


def _touches(a: pymupdf.Rect, b: pymupdf.Rect) -> bool:
    return a.x0 <= b.x1 and b.x0 <= a.x1 and a.y0 <= b.y1 and b.y0 <= a.y1


def merge_charts(regions: list[Region], found: list[tuple[tuple, bool]], body_size: float,
                 page_area: float) -> list[Region]:
    """``regions`` (in reading order) with each chart's labels and drawing made one figure region
    at the place of its first label (module docstring); then tiny figure regions absorbed.

    A chart's reach is built outwards: its tick labels (regions of tick-like words only) within
    ``tuning.CHART_LABEL_REACH`` body sizes of the drawing widen it, then short labels (a legend,
    an axis title) within ``tuning.CHART_LABEL_NEAR`` body sizes of the widened box join."""
    size = max(body_size, 1.0)
    for box, plots in found:
        if not plots:
            continue
        ticks = [i for i, r in enumerate(regions) if _is_ticks(r) and _gap(r.bbox, box) <= tuning.CHART_LABEL_REACH * size]
        if sum(len(regions[i].text.split()) for i in ticks) < tuning.AXIS_TICK_RUN:
            continue
        wide = union_box([box] + [regions[i].bbox for i in ticks])
        near = tuning.CHART_LABEL_NEAR * size
        # a short heading is taken only inside the drawing (a chart's title), never from beside it
        taken = [i for i, r in enumerate(regions)
                 if i in ticks or (_is_label(r) and (_gap(r.bbox, box) == 0 if r.label == "title"
                                                     else _gap(r.bbox, wide) <= near))]
        regions = _merged(regions, taken, box)
    return absorb_tiny_figures(regions, tuning.CHART_LABEL_NEAR * size, page_area)


def _is_ticks(region: Region) -> bool:
    """Whether every word of ``region`` reads as an axis tick (``12``, ``40%``, ``2021-07``)."""
    words = region.text.split()
    return region.label in _TAKEN and bool(words) and all(_TICK.match(w) for w in words)


def _gap(box, other) -> float:
    """How far apart two boxes are (the larger of the horizontal and vertical gaps; 0 if they meet)."""
    dx = max(0.0, max(box[0], other[0]) - min(box[2], other[2]))
    dy = max(0.0, max(box[1], other[1]) - min(box[3], other[3]))
    return max(dx, dy)


def absorb_tiny_figures(regions: list[Region], reach: float, page_area: float) -> list[Region]:
    """Figure regions under ``tuning.CHART_TINY_AREA`` of the page that stand within ``reach`` of
    another figure region join it (a label left beside its chart; a crop of 33 x 17 px is no figure)."""
    changed = True
    while changed:
        changed = False
        for i, region in enumerate(regions):
            if region.label != "figure" or _area(region.bbox) >= tuning.CHART_TINY_AREA * page_area:
                continue
            x0, y0, x1, y1 = region.bbox
            near = (x0 - reach, y0 - reach, x1 + reach, y1 + reach)
            others = [j for j, other in enumerate(regions)
                      if j != i and other.label == "figure" and _overlaps(other.bbox, near)]
            if others:
                regions = _merged(regions, sorted([i] + others[:1]), None)
                changed = True
                break
    return regions


def _merged(regions: list[Region], taken: list[int], box) -> list[Region]:
    """``regions`` with those at ``taken`` made one figure region (with ``box``) where the first was."""
    if not taken:
        return regions
    parts = [regions[i] for i in taken]
    boxes = [r.bbox for r in parts] + ([box] if box is not None else [])
    extra = {"role": "chart"}
    chart = Region("figure", union_box(boxes), "\n".join(r.text for r in parts), parts[0].source,
                   min(r.confidence for r in parts), extra)
    kept = [r for i, r in enumerate(regions) if i not in set(taken)]
    kept.insert(taken[0], chart)
    return kept


def _is_label(region: Region) -> bool:
    return region.label in _TAKEN and len(region.text) <= tuning.CHART_LABEL_CHARS


def _area(box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

