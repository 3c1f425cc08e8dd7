"""The optional PaddleOCR drafter: every way it can be unavailable, and its result mapping."""

from __future__ import annotations

import importlib.util
import sys
import types

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


def test_without_a_folder_paddleocr_fetches_its_own_models(monkeypatch, paddle_installed):
    """No folder configured: PPStructureV3 gets no model paths, so it uses (and fills) its own cache."""
    monkeypatch.delenv(paddle.MODELS_ENV, raising=False)
    seen = {}

    class FakePipeline:
        def __init__(self, **kwargs):
            seen.update(kwargs)

    monkeypatch.setitem(sys.modules, "paddleocr", types.SimpleNamespace(PPStructureV3=FakePipeline))
    drafter = get_drafter("paddle")
    drafter.prepare()
    assert not any(key.endswith(("_model_dir", "_model_name")) for key in seen)
    assert seen["use_doc_unwarping"] is False


def test_offline_without_models_is_one_line(monkeypatch, paddle_installed):
    """What PaddleOCR raises when it cannot fetch a model becomes one line saying what to do."""
    monkeypatch.delenv(paddle.MODELS_ENV, raising=False)

    def offline(**kwargs):
        raise ConnectionError("HTTPSConnectionPool(host='paddle-model-ecology.bj.bcebos.com', port=443):\n"
                              "Max retries exceeded with url: /paddlex/official_models/PP-DocLayout_plus-L.tar")

    monkeypatch.setitem(sys.modules, "paddleocr", types.SimpleNamespace(PPStructureV3=offline))
    drafter = get_drafter("paddle")
    with pytest.raises(DrafterUnavailableError) as info:
        drafter.prepare()
    message = str(info.value)
    assert "\n" not in message and "Max retries exceeded" in message
    assert paddle.MODELS_ENV in message and "connect once" in message


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


def test_documented_result_json_becomes_regions():
    """A result as PP-StructureV3 documents it (``res`` of ``result.json``): blocks with
    ``block_order`` (page headers have none and stay where they stand), LaTeX of the formula
    recogniser in ``formula_res_list`` for a formula block without content."""
    result = {"res": {
        "input_path": None, "page_index": None, "width": 1240, "height": 1754,
        "parsing_res_list": [
            {"block_id": 0, "block_order": None, "block_label": "header", "block_content": "Journal 12",
             "block_bbox": [100, 20, 400, 50]},
            {"block_id": 1, "block_order": 2, "block_label": "text", "block_content": "Second paragraph.",
             "block_bbox": [620, 100, 1140, 400]},
            {"block_id": 2, "block_order": 1, "block_label": "paragraph_title", "block_content": "1 Methods",
             "block_bbox": [100, 100, 600, 140]},
            {"block_id": 3, "block_order": 3, "block_label": "display_formula", "block_content": "",
             "block_bbox": [300, 500, 900, 560]},
            {"block_id": 4, "block_order": 4, "block_label": "formula", "block_content": "$$E=mc^{2}$$",
             "block_bbox": [300, 600, 900, 660]},
            {"block_id": 5, "block_order": 5, "block_label": "inline_formula", "block_content": "\\alpha",
             "block_bbox": [300, 700, 340, 720]},
        ],
        "formula_res_list": [
            {"rec_formula": "\\int_0^1 x\\,dx", "formula_region_id": 3,
             "rec_polys": [[310, 505], [890, 505], [890, 555], [310, 555]]},
        ],
    }}
    regions = paddle.parsing_results_to_regions(paddle._result_dict(result), scale=2.0, source="paddle")
    assert [(r.label, r.text) for r in regions] == [
        ("header", "Journal 12"), ("title", "## 1 Methods"), ("text", "Second paragraph."),
        ("formula", "$$\n\\int_0^1 x\\,dx\n$$"), ("formula", "$$\nE=mc^{2}\n$$"), ("formula", "$\\alpha$")]
    assert regions[1].bbox == (50.0, 50.0, 300.0, 70.0)


@pytest.mark.parametrize("version, device, off", [("3.3.1", "cpu", True), ("3.3.0", "cpu", True),
                                                  ("3.2.2", "cpu", False), ("3.3.1", "gpu:0", False)])
def test_onednn_is_off_where_paddlepaddle_crashes_through_it(monkeypatch, paddle_installed, version, device, off):
    """PaddlePaddle 3.3.0 and 3.3.1 crash on the CPU inside oneDNN, which PaddleOCR turns on by
    default: there the pipeline is built without it; elsewhere PaddleOCR's default stands."""
    from importlib import metadata

    monkeypatch.delenv(paddle.MODELS_ENV, raising=False)
    real_version = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: version if name == "paddlepaddle" else real_version(name))
    seen = {}

    class FakePipeline:
        def __init__(self, **kwargs):
            seen.update(kwargs)

    monkeypatch.setitem(sys.modules, "paddleocr", types.SimpleNamespace(PPStructureV3=FakePipeline))
    paddle.PaddleDrafter(device=device).prepare()
    assert ("enable_mkldnn" in seen and seen["enable_mkldnn"] is False) == off


def test_the_extra_leaves_out_the_releases_that_crash():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text("utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("paddle = "))
    assert all(f"!={v}" in line for v in paddle.ONEDNN_CRASHES)


def test_installed_paddleocr_runs_as_far_as_its_models(tmp_path):
    """With PaddleOCR and PaddlePaddle really installed (skipped otherwise): ``hsd draft --drafter
    paddle`` imports them, builds PP-StructureV3 from a model folder whose models cannot be
    loaded, with the network closed (no model is ever fetched here), and says so in one line."""
    if importlib.util.find_spec("paddleocr") is None or importlib.util.find_spec("paddle") is None:
        pytest.skip("PaddleOCR and PaddlePaddle are not installed (the paddle extra)")
    import os
    import subprocess

    import pymupdf

    pdf = tmp_path / "page.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A page for the paddle drafter to read", fontsize=12)
    doc.save(pdf)
    models = tmp_path / "models"
    for name in ("PP-DocLayout_plus-L", "PP-OCRv5_server_det", "PP-OCRv5_server_rec"):
        (models / name).mkdir(parents=True)
    closed = "http://127.0.0.1:9"  # nothing listens: every download fails at once
    env = dict(os.environ, HOME=str(tmp_path), HSD_PADDLE_MODELS=str(models), HTTP_PROXY=closed,
               HTTPS_PROXY=closed, http_proxy=closed, https_proxy=closed, NO_PROXY="", no_proxy="")
    done = subprocess.run([sys.executable, "-m", "core.cli", "draft", str(pdf), "--drafter", "paddle"],
                          capture_output=True, text=True, env=env, timeout=600)
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("hsd: error")]
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout
    assert len(errors) == 1 and "could not load its models" in errors[0] and paddle.MODELS_ENV in errors[0]
