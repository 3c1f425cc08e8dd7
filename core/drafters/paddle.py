"""PaddleOCR PP-StructureV3 (the HSD paper's drafter) as an optional drafter.

Not installed by default: ``pip install "hsd-studio[paddle]"`` (PaddleOCR and the CPU build of
PaddlePaddle; a GPU machine installs the ``paddlepaddle-gpu`` wheel for its CUDA instead). It runs
as PaddleOCR users run it:

* **Online** (nothing configured): ``PPStructureV3`` fetches its default models on first use into
  PaddleOCR's own cache (``~/.paddlex/official_models``) and reuses them after that.
* **Offline**: point ``HSD_PADDLE_MODELS`` (or ``models_dir=``) at a folder holding one sub-folder per
  model, named as PaddleX names them, e.g.::

    models/PP-DocLayout_plus-L  models/PP-OCRv5_server_det  models/PP-OCRv5_server_rec
    models/SLANeXt_wired        models/PP-FormulaNet_plus-L  ...

  Every known sub-folder found is passed to ``PPStructureV3`` as ``<stage>_model_name`` and
  ``<stage>_model_dir``; stages without a folder fall back to PaddleOCR's cache.

Orientation and unwarping stages are off (pages arrive upright). Each block of the result's
``parsing_res_list`` (reading order) becomes a region; formula blocks carry the formula
recogniser's LaTeX (``formula_res_list``), drafted as ``$$ ... $$`` (display) or ``$ ... $``
(inline), the way document VLMs write formulas. A model that cannot be fetched (no network, no
folder) is one line, ``DrafterUnavailableError``, when the models load (``prepare``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from core import tuning
from core.drafters.base import DrafterBase, Region
from core.drafters.normalize import clean_draft_text
from core.errors import DrafterUnavailableError

MODELS_ENV = "HSD_PADDLE_MODELS"

#: PP-StructureV3 constructor prefix -> model names we look for (first found wins).
STAGE_MODELS = {
    "layout_detection": ["PP-DocLayout_plus-L", "PP-DocLayout-L", "PP-DocLayout-M", "PP-DocLayout-S"],
    "text_detection": ["PP-OCRv5_server_det", "PP-OCRv5_mobile_det"],
    "text_recognition": ["PP-OCRv5_server_rec", "PP-OCRv5_mobile_rec", "en_PP-OCRv5_mobile_rec"],
    "table_classification": ["PP-LCNet_x1_0_table_cls"],
    "wired_table_structure_recognition": ["SLANeXt_wired"],
    "wireless_table_structure_recognition": ["SLANet_plus"],
    "wired_table_cells_detection": ["RT-DETR-L_wired_table_cell_det"],
    "wireless_table_cells_detection": ["RT-DETR-L_wireless_table_cell_det"],
    "formula_recognition": ["PP-FormulaNet_plus-L", "PP-FormulaNet_plus-M", "PP-FormulaNet_plus-S"],
    "seal_text_detection": ["PP-OCRv4_server_seal_det"],
    "chart_recognition": ["PP-Chart2Table"],
}
REQUIRED_STAGES = ("layout_detection", "text_detection", "text_recognition")

#: PP-StructureV3 block labels -> our region labels.
PADDLE_LABELS = {
    "doc_title": "title", "paragraph_title": "title", "text": "text", "abstract": "text",
    "content": "text", "reference": "text", "reference_content": "text", "table": "table",
    "formula": "formula", "display_formula": "formula", "inline_formula": "formula",
    "image": "figure", "chart": "figure", "figure_title": "caption", "table_title": "caption",
    "chart_title": "caption", "header": "header", "footer": "footer", "number": "page_number",
    "footnote": "footnote", "algorithm": "code", "aside_text": "text", "seal": "figure",
    "list": "list",
}
_HOW_TO = "install it with pip install \"hsd-studio[paddle]\""
_OFFLINE = (f"connect once so that PaddleOCR fetches them into its cache, or set {MODELS_ENV} to a folder with the "
            "PP-StructureV3 models (PP-DocLayout_plus-L, PP-OCRv5_server_det, PP-OCRv5_server_rec, ...)")


def find_stage_models(models_dir: Path) -> dict[str, str]:
    """{"<stage>_model_name": ..., "<stage>_model_dir": ...} for every model folder found."""
    kwargs: dict[str, str] = {}
    for stage, names in STAGE_MODELS.items():
        for name in names:
            if (models_dir / name).is_dir():
                kwargs[f"{stage}_model_name"] = name
                kwargs[f"{stage}_model_dir"] = str(models_dir / name)
                break
    return kwargs


class PaddleDrafter(DrafterBase):
    """PP-StructureV3 regions. Raises DrafterUnavailableError at construction when PaddleOCR is
    missing or a configured model folder is unusable, and in ``prepare`` (or the first page) when
    the models cannot be loaded or fetched."""

    name = "paddle"

    def __init__(self, models_dir: str | os.PathLike | None = None, dpi: int | None = None, device: str = "cpu"):
        if importlib.util.find_spec("paddleocr") is None:
            raise DrafterUnavailableError(f"the paddle drafter needs PaddleOCR, which is not installed: {_HOW_TO}")
        models_dir = models_dir or os.environ.get(MODELS_ENV)
        self.stage_kwargs: dict[str, str] = {}
        if models_dir:
            models_dir = Path(models_dir).expanduser()
            if not models_dir.is_dir():
                raise DrafterUnavailableError(f"the paddle model folder {models_dir} does not exist ({MODELS_ENV})")
            self.stage_kwargs = find_stage_models(models_dir)
            missing = [s for s in REQUIRED_STAGES if f"{s}_model_dir" not in self.stage_kwargs]
            if missing:
                raise DrafterUnavailableError(
                    f"the paddle model folder {models_dir} lacks models for: {', '.join(missing)} "
                    f"(expected sub-folders such as {', '.join(STAGE_MODELS[missing[0]][:2])})"
                )
        self.models_dir = models_dir
        self.dpi = dpi or tuning.PADDLE_DPI
        self.device = device
        self._pipeline = None

    def prepare(self, page=None) -> None:
        """Load the pipeline (fetching PaddleOCR's default models on first use where none are local)."""
        self._engine()

    def _engine(self):
        if self._pipeline is None:
            try:
                from paddleocr import PPStructureV3
                options = {"enable_mkldnn": False} if onednn_crashes(self.device) else {}
                with quiet_paddlex():
                    self._pipeline = PPStructureV3(
                        use_doc_orientation_classify=False, use_doc_unwarping=False, use_textline_orientation=False,
                        device=self.device, **self.stage_kwargs, **options,
                    )
            except Exception as exc:  # PaddleOCR raises whatever its download or loading meets
                where = f"from {self.models_dir}" if self.models_dir else "(PaddleOCR fetches them on first use)"
                raise DrafterUnavailableError(
                    f"the paddle drafter could not load its models {where}: {_one_line(exc)}; {_OFFLINE}") from None
        return self._pipeline

    def draft(self, page) -> list[Region]:
        image = page.render(dpi=self.dpi)
        scale = page.last_render_scale
        results = self._engine().predict(np.asarray(image)[:, :, ::-1])  # PaddleX takes BGR arrays
        regions: list[Region] = []
        for result in results:
            regions += parsing_results_to_regions(_result_dict(result), scale, self.name)
        return regions


#: PaddlePaddle releases whose oneDNN (MKL-DNN) path crashes on CPU in PP-StructureV3's models
#: (``ConvertPirAttribute2RuntimeAttribute``; PaddleOCR issue 18162): PaddleOCR turns oneDNN on by
#: default, so on these it is turned off (slower, but the page is drafted). The ``paddle`` extra
#: excludes them.
ONEDNN_CRASHES = ("3.3.0", "3.3.1")


def onednn_crashes(device: str) -> bool:
    """Whether PaddleOCR must run without oneDNN: on the CPU under a PaddlePaddle of
    ``ONEDNN_CRASHES``."""
    if not str(device).startswith("cpu"):
        return False
    from importlib import metadata

    try:
        version = metadata.version("paddlepaddle")
    except metadata.PackageNotFoundError:
        return False
    return version in ONEDNN_CRASHES


def quiet_paddlex():
    """PaddleX's own messages (a coloured "No model hoster is available!" on stdout and its log)
    kept out of the user's terminal while the pipeline is built: what went wrong is said once,
    as ``DrafterUnavailableError``."""
    import contextlib
    import io
    import logging

    @contextlib.contextmanager
    def quiet():
        loggers = [logging.getLogger(name) for name in ("paddlex", "paddleocr", "ppocr")]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.CRITICAL)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)

    return quiet()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _result_dict(result) -> dict:
    data = getattr(result, "json", result)
    data = data() if callable(data) else data
    return data.get("res", data) if isinstance(data, dict) else {}


def parsing_results_to_regions(res: dict, scale: float, source: str) -> list[Region]:
    """PP-StructureV3's result (``res`` of its documented JSON) -> regions in points.

    ``parsing_res_list`` is in reading order (blocks with a ``block_order`` sorted by it, the
    others, page headers and footers, where they stand); a formula block's LaTeX is its content,
    else the ``formula_res_list`` entry whose box lies inside the block."""
    blocks = list(res.get("parsing_res_list") or [])
    if any(b.get("block_order") is not None for b in blocks):
        ordered = iter(sorted((b for b in blocks if b.get("block_order") is not None), key=lambda b: b["block_order"]))
        blocks = [next(ordered) if b.get("block_order") is not None else b for b in blocks]
    formulas = _formula_boxes(res.get("formula_res_list") or [])
    regions = []
    for block in blocks:
        raw = str(block.get("block_label", "text"))
        label = PADDLE_LABELS.get(raw, "text")
        bbox = tuple(float(v) for v in (block.get("block_bbox") or (0, 0, 0, 0))[:4])
        text = block.get("block_content") or ""
        if label == "formula":
            text = formula_markdown(text or _formula_inside(bbox, formulas), inline=raw == "inline_formula")
        elif label != "table":
            text = clean_draft_text(text)
        if label == "title" and text and not text.startswith("#"):
            text = ("# " if raw == "doc_title" else "## ") + text
        if not text.strip():
            continue
        x0, y0, x1, y1 = (v / scale for v in bbox)
        regions.append(Region(label, (x0, y0, x1, y1), text, source, 1.0))
    return regions


def formula_markdown(latex: str, inline: bool = False) -> str:
    """The recogniser's LaTeX as Markdown math: ``$$\\n...\\n$$`` (display) or ``$...$`` (inline);
    delimiters it already wrote (``$$``, ``\\[``, ``\\(``) are replaced, not doubled."""
    body = latex.strip()
    for opening, closing in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if body.startswith(opening) and body.endswith(closing) and len(body) >= len(opening) + len(closing):
            body = body[len(opening):len(body) - len(closing)].strip()
            break
    if not body:
        return ""
    return f"${body}$" if inline else f"$$\n{body}\n$$"


def _formula_boxes(items: list) -> list[tuple[tuple, str]]:
    """(box, LaTeX) of each ``formula_res_list`` entry (``rec_polys``: four corner points, or a box)."""
    out = []
    for item in items:
        latex = item.get("rec_formula") or ""
        poly = item.get("rec_polys")
        if poly is None:
            poly = item.get("dt_polys")
        try:
            points = np.asarray(poly, dtype=float).reshape(-1, 2)
        except (TypeError, ValueError):
            continue
        if latex and len(points):
            out.append(((points[:, 0].min(), points[:, 1].min(), points[:, 0].max(), points[:, 1].max()), latex))
    return out


def _formula_inside(bbox: tuple, formulas: list[tuple[tuple, str]]) -> str:
    for (x0, y0, x1, y1), latex in formulas:
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if bbox[0] <= cx <= bbox[2] and bbox[1] <= cy <= bbox[3]:
            return latex
    return ""
