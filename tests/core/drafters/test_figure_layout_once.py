"""A scan page with a figure whose decode ended (stopped while read, or asked for its layout only)
makes its layout twice, once from its detected lines (which lines its figure needs) and once
from the lines read (their groups): PyMuPDF's layout model's image network, most of a run's CPU,
runs once for both (``scan_layout._ImageNetworkReuse``), and the drafts are those of two whole
runs (real RapidOCR and layout model; the stop is the test's, after the first lines, never timed)."""

from __future__ import annotations

import pymupdf
import pytest

from core.documents import open_document
from core.drafters import get_drafter
from core.drafters.layout import TextLine
from tests.core.drafters.test_scan_layout import HEIGHT, WIDTH, two_column_lines
from tests.core.drafters.test_stop_figures import scans_pdf

PAGES = ["plain", "one figure", "two figures", "figure first"]

pytest.importorskip("pymupdf.layout")


def _image_network_in_reach() -> bool:
    """Whether this PyMuPDF keeps its layout model's image network where the reuse finds it (a
    release that moves it makes layouts run whole, as before: slower, the same drafts)."""
    from core.drafters import scan_layout

    scan_layout.load_model()
    extractor = getattr(getattr(scan_layout._MODEL, "_model", None), "feature_extractor", None)
    return all(hasattr(extractor, name) for name in ("mark_cached", "consume_cache", "get_feature_map"))


pytestmark = pytest.mark.skipif(not _image_network_in_reach(),
                                reason="this PyMuPDF keeps its layout model's image network out of reach")


@pytest.fixture
def image_network_runs(monkeypatch):
    """How many times PyMuPDF's layout model ran its image network (any extractor class)."""
    from pymupdf.layout.onnx import ImageFeatureExtractorV1, ImageFeatureExtractorV2

    runs = []
    for cls in (ImageFeatureExtractorV1.ImageFeatureExtractorV1, ImageFeatureExtractorV2.ImageFeatureExtractorV2):
        def counted(self, *args, _predict=cls.predict, **kwargs):
            runs.append(id(self))
            return _predict(self, *args, **kwargs)
        monkeypatch.setattr(cls, "predict", counted)
    return runs


@pytest.fixture
def full_runs(monkeypatch):
    """A switch: ``full_runs()`` makes every layout run run the whole model again, as before the
    image network's output was reused."""
    from core.drafters import scan_layout

    def whole(self, model, page, key):
        return model.predict(page, return_raw=True)

    return lambda: monkeypatch.setattr(scan_layout._ImageNetworkReuse, "predict", whole)


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    return scans_pdf(tmp_path_factory.mktemp("figure_layout") / "figures.pdf", PAGES)


def _drafts(pdf, mode: str, runs: list, groups: list) -> list:
    """Per page after the first (read whole: a document's first page learns its script):
    ``(regions, image network runs, layout runs)`` drafted as ``mode`` ("stopped": after its
    first lines told; "layout": ``draft_layout``)."""
    from core.drafters import scan_layout

    drafter = get_drafter("rapidocr")
    out = []
    layout_groups = scan_layout.layout_groups

    def counted(*args):
        groups.append(1)
        return layout_groups(*args)

    scan_layout.layout_groups = counted
    try:
        with open_document(pdf) as document:
            drafter.draft(document.page(0))
            for index in range(1, len(PAGES)):
                runs.clear()
                groups.clear()
                page = document.page(index)
                if mode == "layout":
                    regions = drafter.draft_layout(page)
                else:
                    told = []
                    drafter.stop_when(lambda: bool(told))
                    try:
                        regions = drafter.draft(page, on_lines=told.append)
                    finally:
                        drafter.stop_when(None)
                assert any(r.extra.get("unread") for r in regions), "the page was read whole"
                out.append(([(r.label, r.bbox, r.text, r.extra) for r in regions], len(runs), len(groups)))
    finally:
        scan_layout.layout_groups = layout_groups
    return out


@pytest.mark.parametrize("mode", ["stopped", "layout"])
def test_a_figure_page_not_read_whole_runs_the_image_network_once(pdf, mode, image_network_runs, full_runs):
    layout_runs: list = []
    drafts = _drafts(pdf, mode, image_network_runs, layout_runs)
    figure_pages = [d for d in drafts if any(label == "figure" for label, *_ in d[0])]
    assert len(figure_pages) == len(PAGES) - 1, "the layout found no figure on a generated figure page"
    # its layout from the detected lines, then from the lines read: two layout runs, one image network
    assert [(runs, layouts) for _, runs, layouts in drafts] == [(1, 2)] * (len(PAGES) - 1)
    full_runs()
    whole = _drafts(pdf, mode, image_network_runs, layout_runs)
    assert [(runs, layouts) for _, runs, layouts in whole] == [(2, 2)] * (len(PAGES) - 1)
    assert [regions for regions, *_ in drafts] == [regions for regions, *_ in whole]


def _chart_page():
    """A page image with a bar chart under a title and two columns of text (PIL), and its lines."""
    from PIL import Image

    doc = pymupdf.open()
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    lines = two_column_lines()
    for line in lines:
        page.insert_text((line.bbox[0], line.bbox[3] - 2), line.text, fontsize=line.size, fontname="helv")
    for k in range(5):
        page.draw_rect(pymupdf.Rect(120 + 50 * k, 330 - 25 * (k + 1), 150 + 50 * k, 330), fill=(0.5, 0.5, 0.5))
    pix = page.get_pixmap(dpi=144)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples), lines


def test_a_second_layout_of_the_same_image_reuses_the_image_network_and_groups_as_a_whole_run(
        image_network_runs, full_runs, monkeypatch):
    import numpy as np

    from core.drafters import scan_layout

    image, lines = _chart_page()
    other, _ = _chart_page()  # equal pixels, another image: written the same, so reused too
    blank = image.point(lambda v: 255)
    placeholders = scan_layout.placeholder_lines(lines)
    calls = [(image, placeholders), (image, lines), (other, lines[:5] + placeholders[5:]),
             (blank, lines),  # another picture: run again
             (image, placeholders)]  # and again after it

    def layouts():
        """Each call's groups and the image network's output they were made from."""
        out = []
        for picture, page_lines in calls:
            groups = scan_layout.layout_groups(WIDTH, HEIGHT, picture, page_lines)
            out.append((groups, np.array(scan_layout._MODEL._model.feature_extractor.get_feature_map())))
        return out

    monkeypatch.setattr(scan_layout, "_IMAGE_NETWORK", scan_layout._ImageNetworkReuse())
    reused = layouts()
    assert len(image_network_runs) == 3
    assert scan_layout._IMAGE_NETWORK.reused == 2 and scan_layout._IMAGE_NETWORK.runs == 5
    image_network_runs.clear()
    full_runs()
    whole = layouts()
    assert len(image_network_runs) == 5
    assert [groups for groups, _ in reused] == [groups for groups, _ in whole]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(reused, whole))
    assert not np.array_equal(whole[1][1], whole[3][1]), "the picture made no difference: the test shows nothing"


def test_a_run_that_fails_leaves_no_reuse_behind(image_network_runs, monkeypatch):
    """A layout run that raises before the image network leaves the model's cache flag unset: the
    next run, of another image, runs the network on its own picture."""
    from core.drafters import scan_layout

    image, lines = _chart_page()
    blank = image.point(lambda v: 255)
    monkeypatch.setattr(scan_layout, "_IMAGE_NETWORK", scan_layout._ImageNetworkReuse())
    scan_layout.layout_groups(WIDTH, HEIGHT, image, lines)
    model = scan_layout._MODEL
    predict = type(model).predict

    def failing(self, page, **kwargs):
        raise RuntimeError("the model failed")

    monkeypatch.setattr(type(model), "predict", failing)
    with pytest.raises(RuntimeError):
        scan_layout.layout_groups(WIDTH, HEIGHT, image, lines)
    monkeypatch.setattr(type(model), "predict", predict)
    image_network_runs.clear()
    scan_layout.layout_groups(WIDTH, HEIGHT, blank, [TextLine((40, 40, 300, 62), "A blank page", 18.0)])
    assert len(image_network_runs) == 1
    scan_layout.layout_groups(WIDTH, HEIGHT, image, lines)  # nothing kept of the failed run: runs again
    assert len(image_network_runs) == 2


def test_a_last_page_read_to_its_end_after_its_layout_was_made_beside_runs_the_image_network_once(
        pdf, image_network_runs, monkeypatch):
    """Its layout from the detected lines, made beside its reading for a stop that never came
    (``rapidocr._Beside``), leaves the page's own layout run only the graph network to run."""
    import multiprocessing

    from core.drafters.process import DRAFTING_PROCESS_NAME

    monkeypatch.setattr(multiprocessing.current_process(), "name", DRAFTING_PROCESS_NAME)
    drafter = get_drafter("rapidocr")
    with open_document(pdf) as document:
        drafter.stop_when(lambda: True)  # a stopped first page: the drafter is behind its decode
        try:
            drafter.draft(document.page(0))
            drafter.stop_when(lambda: False)  # the page is read to its end
            image_network_runs.clear()
            regions = drafter.draft(document.page(1))
        finally:
            drafter.stop_when(None)
    assert not any(r.extra.get("unread") for r in regions)
    assert len(image_network_runs) == 1
