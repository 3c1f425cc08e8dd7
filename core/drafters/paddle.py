"""PaddleOCR PP-StructureV3 (the HSD paper's drafter) as an optional drafter.

Not installed by default: ``pip install "hsd-studio[paddle]"`` (and a PaddlePaddle wheel for your
machine). Models are never downloaded: point ``HSD_PADDLE_MODELS`` (or ``models_dir=``) at a folder
holding one sub-folder per model, named as PaddleX names them, e.g.::

    models/PP-DocLayout_plus-L  models/PP-OCRv5_server_det  models/PP-OCRv5_server_rec
    models/SLANeXt_wired        models/PP-FormulaNet_plus-L  ...

Every known sub-folder found is passed to ``PPStructureV3`` as ``<stage>_model_name`` and
``<stage>_model_dir``; orientation/unwarping stages are switched off.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from core.drafters.base import Region
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
_HOW_TO = (f"install it with pip install \"hsd-studio[paddle]\" plus a paddlepaddle wheel, and set {MODELS_ENV} "
           "to a folder with the PP-StructureV3 models (PP-DocLayout_plus-L, PP-OCRv5_server_det, "
           "PP-OCRv5_server_rec, ...)")


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


class PaddleDrafter:
    """PP-StructureV3 regions. Raises DrafterUnavailableError at construction when PaddleOCR is
    missing or the model folder is not configured, so a run fails before any page is read."""

    name = "paddle"

    def __init__(self, models_dir: str | os.PathLike | None = None, dpi: int | None = None, device: str = "cpu"):
        if importlib.util.find_spec("paddleocr") is None:
            raise DrafterUnavailableError(f"the paddle drafter needs PaddleOCR, which is not installed: {_HOW_TO}")
        models_dir = models_dir or os.environ.get(MODELS_ENV)
        if not models_dir:
            raise DrafterUnavailableError(f"the paddle drafter is not configured: {_HOW_TO}")
        models_dir = Path(models_dir).expanduser()
        if not models_dir.is_dir():
            raise DrafterUnavailableError(f"the paddle model folder {models_dir} does not exist: {_HOW_TO}")
        self.stage_kwargs = find_stage_models(models_dir)
        missing = [s for s in REQUIRED_STAGES if f"{s}_model_dir" not in self.stage_kwargs]
        if missing:
            raise DrafterUnavailableError(
                f"the paddle model folder {models_dir} lacks models for: {', '.join(missing)} "
                f"(expected sub-folders such as {', '.join(STAGE_MODELS[missing[0]][:2])})"
            )
        self.dpi = dpi or 200
        self.device = device
        self._pipeline = None

    def _engine(self):
        if self._pipeline is None:
            from paddleocr import PPStructureV3
            self._pipeline = PPStructureV3(
                use_doc_orientation_classify=False, use_doc_unwarping=False, use_textline_orientation=False,
                device=self.device, **self.stage_kwargs,
            )
        return self._pipeline

    def draft(self, page) -> list[Region]:
        image = page.render(dpi=self.dpi)
        scale = page.last_render_scale
        results = self._engine().predict(np.asarray(image)[:, :, ::-1])  # PaddleX takes BGR arrays
        regions: list[Region] = []
        for result in results:
            regions += parsing_results_to_regions(_result_dict(result), scale, self.name)
        return regions


def _result_dict(result) -> dict:
    data = getattr(result, "json", result)
    data = data() if callable(data) else data
    return data.get("res", data) if isinstance(data, dict) else {}


def parsing_results_to_regions(res: dict, scale: float, source: str) -> list[Region]:
    """PP-StructureV3's ``parsing_res_list`` (already in reading order) -> regions in points."""
    regions = []
    for block in res.get("parsing_res_list", []):
        label = PADDLE_LABELS.get(str(block.get("block_label", "text")), "text")
        text = block.get("block_content") or ""
        if label not in ("table", "formula"):
            text = clean_draft_text(text)
        if label == "title" and text and not text.startswith("#"):
            text = ("# " if block.get("block_label") == "doc_title" else "## ") + text
        if not text.strip():
            continue
        x0, y0, x1, y1 = (float(v) / scale for v in block.get("block_bbox", (0, 0, 0, 0))[:4])
        regions.append(Region(label, (x0, y0, x1, y1), text, source, 1.0))
    return regions
