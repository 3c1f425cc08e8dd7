"""PyMuPDF's layout model on scan pages whose decode ended: its runs, its CPU and the drafts, a page.

    python -m tools.bench.figure_layout_runs OUT.json PDF [PDF ...] [--modes layout,stopped]

Drafts every page of each ``PDF`` (a document of ``tools.bench.scan_documents``) with a RapidOCR
drafter of its own a mode, the first page read whole (it learns the document's script), the others
as: ``whole`` (always drafted first: the reference), ``layout`` (``draft_layout``: the decode ended
before drafting began), ``stopped`` (stopped once its first lines are told), and, as an
experiment, ``layout-first`` and ``stopped-first``: the read lines of a figure page placed by the
stop's layout of its detected lines, as a page without a figure is (the layout model run once, not
once more over the lines read). Per page and mode it counts the layout runs
(``scan_layout.layout_groups``) with each one's CPU seconds, the runs of the model's image network,
the page's drafting CPU seconds (``time.process_time``, every thread), and whether the page's
exported Markdown (the whole read's text with figure links, ``core.export.page_markdown``) is the
whole read's. A page counts as a figure page where its whole read has a figure. ``OUT.json`` holds
every page's counts and drafts (label, box, text, extra keys of each region), so two trees can be
checked for the same drafts: run it inside each (``cd TREE && python -m ...``) and compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from tools.bench.stop_lines import draft_as

MODES = ("layout", "stopped", "layout-first", "stopped-first")


def _counting():
    """Counts of layout runs (their CPU seconds) and image network runs, by wrapping both."""
    from pymupdf.layout.onnx import ImageFeatureExtractorV1, ImageFeatureExtractorV2

    from core.drafters import scan_layout

    counts = {"layout": [], "image": 0}
    groups = scan_layout.layout_groups

    def counted_groups(*args, **kwargs):
        start = time.process_time()
        try:
            return groups(*args, **kwargs)
        finally:
            counts["layout"].append(round(time.process_time() - start, 3))

    scan_layout.layout_groups = counted_groups
    for cls in (ImageFeatureExtractorV1.ImageFeatureExtractorV1, ImageFeatureExtractorV2.ImageFeatureExtractorV2):
        def counted(self, *args, _predict=cls.predict, **kwargs):
            counts["image"] += 1
            return _predict(self, *args, **kwargs)
        cls.predict = counted
    return counts


def _markdown(regions, text: str, image, page) -> str:
    from core.export import figure_crops, figure_link, page_markdown
    from core.results import PageResult

    result = PageResult(page=page.index + 1, width=page.width, height=page.height, markdown=text, regions=regions,
                        region_stats=[], region_outputs=[], spans=[], stats=None)
    return page_markdown(result, {i: figure_link("x_images", page.index + 1, i) for i in figure_crops(result, image)})


def draft_document(pdf: Path, modes: list[str], counts: dict) -> list[dict]:
    from core.documents import open_document
    from core.drafters import rapidocr
    from core.results import FIGURE_LABELS

    figureless = rapidocr._figureless_groups

    def stop_groups(whole_layout):
        return whole_layout[0].groups if whole_layout and isinstance(whole_layout[0], rapidocr.PageLayout) else None

    rows, whole = [], {}
    for mode in ["whole"] + modes:
        rapidocr._figureless_groups = stop_groups if mode.endswith("-first") else figureless
        try:
            drafter = rapidocr.RapidOCRDrafter()
            drafter.prepare()
            with open_document(pdf) as document:
                for index in range(document.page_count):
                    page = document.page(index)
                    counts.update(layout=[], image=0)
                    told: list = []
                    start = time.process_time()
                    regions = draft_as(drafter, page, index, mode, told)
                    cpu = time.process_time() - start
                    whole.setdefault(index, regions)
                    reference = whole[index]
                    text = "\n\n".join(r.text for r in reference if r.text and r.label not in FIGURE_LABELS)
                    image = page.render(dpi=72)
                    rows.append({"pdf": pdf.name, "mode": mode, "page": index + 1, "layout_runs": len(counts["layout"]),
                                 "layout_cpu": counts["layout"], "image_network_runs": counts["image"],
                                 "cpu_seconds": round(cpu, 3),
                                 "figure": any(r.label in FIGURE_LABELS for r in reference),
                                 "markdown_as_whole": _markdown(regions, text, image, page) == _markdown(reference, text, image, page),
                                 "regions": [[r.label, [round(v, 3) for v in r.bbox], r.text, sorted(r.extra)] for r in regions]})
        finally:
            rapidocr._figureless_groups = figureless
    return rows


def summary(rows: list[dict]) -> list[str]:
    figures = {(r["pdf"], r["page"]) for r in rows if r["mode"] == "whole" and r["figure"] and r["page"] > 1}
    out = [f"figure pages (by the whole read, first pages left out): {len(figures)}"]
    for mode in dict.fromkeys(r["mode"] for r in rows if r["mode"] != "whole"):
        on = [r for r in rows if r["mode"] == mode and (r["pdf"], r["page"]) in figures]
        if not on:
            continue
        seconds = [r["layout_cpu"][1] for r in on if len(r["layout_cpu"]) > 1]
        out.append(f"{mode:14s} layout runs {sum(r['layout_runs'] for r in on)}, image network runs "
                   f"{sum(r['image_network_runs'] for r in on)}, CPU a page {sum(r['cpu_seconds'] for r in on) / len(on):.2f} s "
                   f"(layout {sum(sum(r['layout_cpu']) for r in on) / len(on):.2f} s; second layout run median "
                   f"{statistics.median(seconds) if seconds else 0:.3f} s), Markdown as the whole read's "
                   f"{sum(r['markdown_as_whole'] for r in on)}/{len(on)}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("pdf", type=Path, nargs="+")
    parser.add_argument("--modes", default="layout,stopped", help=f"comma-separated, of {', '.join(MODES)}")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown modes {', '.join(unknown)}; known: {', '.join(MODES)}")
    missing = [str(p) for p in args.pdf if not p.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)}")
        return 2
    counts = _counting()
    rows = [row for pdf in args.pdf for row in draft_document(pdf, modes, counts)]
    args.out.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
