"""The optional PaddleOCR drafter: every way it can be unavailable, and its result mapping."""

from __future__ import annotations

import importlib.util

import pytest

from core.drafters import get_drafter, paddle
from core.errors import DrafterUnavailableError


@pytest.fixture
def paddle_installed(monkeypatch):
    """Pretend paddleocr is importable (it is not installed in the test environment)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "paddleocr" else real(name, *a))


def test_not_installed_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "paddleocr" else real(name, *a))
    with pytest.raises(DrafterUnavailableError, match=r"not installed.*hsd-studio\[paddle\]"):
        get_drafter("paddle")


def test_installed_but_not_configured(monkeypatch, paddle_installed):
    monkeypatch.delenv(paddle.MODELS_ENV, raising=False)
    with pytest.raises(DrafterUnavailableError, match=paddle.MODELS_ENV):
        get_drafter("paddle")


def test_model_folder_missing(monkeypatch, paddle_installed, tmp_path):
    monkeypatch.setenv(paddle.MODELS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(DrafterUnavailableError, match="does not exist"):
        get_drafter("paddle")


def test_model_folder_incomplete(paddle_installed, tmp_path):
    (tmp_path / "PP-DocLayout_plus-L").mkdir()
    with pytest.raises(DrafterUnavailableError, match="text_detection"):
        get_drafter("paddle", models_dir=tmp_path)


def test_configured_folder_maps_models_to_stages(paddle_installed, tmp_path):
    for name in ("PP-DocLayout_plus-L", "PP-OCRv5_mobile_det", "PP-OCRv5_server_rec", "SLANeXt_wired"):
        (tmp_path / name).mkdir()
    drafter = get_drafter("paddle", models_dir=tmp_path)
    assert drafter.stage_kwargs["text_detection_model_name"] == "PP-OCRv5_mobile_det"
    assert drafter.stage_kwargs["wired_table_structure_recognition_model_dir"] == str(tmp_path / "SLANeXt_wired")
    assert "formula_recognition_model_dir" not in drafter.stage_kwargs


def test_parsing_results_become_regions_in_points():
    res = {"parsing_res_list": [
        {"block_label": "doc_title", "block_content": "Ｔｉｔｌｅ", "block_bbox": [100, 50, 400, 90]},
        {"block_label": "text", "block_content": "Body  text.", "block_bbox": [100, 100, 700, 300]},
        {"block_label": "table", "block_content": "<table><tr><td>1</td></tr></table>", "block_bbox": [0, 0, 10, 10]},
        {"block_label": "image", "block_content": "", "block_bbox": [0, 0, 10, 10]},
    ]}
    regions = paddle.parsing_results_to_regions(res, scale=2.0, source="paddle")
    assert [(r.label, r.text) for r in regions] == [
        ("title", "# Title"), ("text", "Body text."), ("table", "<table><tr><td>1</td></tr></table>")]
    assert regions[0].bbox == (50.0, 25.0, 200.0, 45.0)
