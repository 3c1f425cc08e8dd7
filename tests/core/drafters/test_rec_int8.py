"""The recogniser's int8 copy (core.drafters.rec_int8): made from a model, cached, reused, and the
full model kept where it cannot be made; the setting that asks for it."""

import sys
from pathlib import Path

import numpy as np
import pytest

from core import tuning
from core.drafters import parse_drafter_spec, rec_int8
from core.drafters.ocr_pipeline import REC_MODEL, OcrPipeline, model_file


def small_recogniser(path: Path, classes: int = 7, convs: int = 1) -> Path:
    """An ONNX network shaped as the recogniser is (input ``x``: N x 3 x 48 x W; a convolution
    over the line, ``convs - 1`` more of one pixel, then a matrix product to ``classes`` per
    column), with fixed random weights."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    weights = [numpy_helper.from_array(rng.normal(0, 0.2, (8, 3, 48, 4)).astype(np.float32), "conv_w0")]
    nodes = [helper.make_node("Conv", ["x", "conv_w0"], ["c0"], strides=[48, 4], name="Conv.0")]  # N x 8 x 1 x W/4
    for i in range(1, convs):
        weights.append(numpy_helper.from_array(rng.normal(0, 0.4, (8, 8, 1, 1)).astype(np.float32), f"conv_w{i}"))
        nodes.append(helper.make_node("Conv", [f"c{i - 1}", f"conv_w{i}"], [f"c{i}"], name=f"Conv.{i}"))
    head = rng.normal(0, 0.5, (8, classes)).astype(np.float32)
    nodes += [
        helper.make_node("Relu", [f"c{convs - 1}"], ["r"]),
        helper.make_node("Squeeze", ["r", "axis2"], ["s"]),  # N x 8 x W/4
        helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1]),  # N x W/4 x 8
        helper.make_node("MatMul", ["t", "head"], ["logits"], name="MatMul.0"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "small_recogniser",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 48, "w"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", "steps", classes])],
        weights + [numpy_helper.from_array(head, "head"), numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    helper.set_model_props(model, {"character": "abcdef"})
    onnx.save(model, str(path))
    return path


def test_the_cache_folder_is_the_users_or_the_one_named(monkeypatch, tmp_path):
    monkeypatch.setenv("HSD_CACHE_DIR", str(tmp_path / "mine"))
    assert rec_int8.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("HSD_CACHE_DIR")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert rec_int8.cache_dir() == tmp_path / "xdg" / "hsd-studio"


def test_calibration_lines_are_drawn_text_lines():
    lines = rec_int8.calibration_lines()
    latin = sum(all(ord(c) < 256 for c in t) for t in rec_int8.CALIBRATION_TEXTS)
    assert len(lines) == latin * (len(rec_int8.CALIBRATION_FONTS) - 1) + len(rec_int8.CALIBRATION_TEXTS)
    for crop in lines:
        assert crop.ndim == 3 and crop.shape[2] == 3 and crop.dtype == np.uint8
        assert crop.shape[1] > 2 * crop.shape[0]  # a line, wider than high
        assert (crop < 128).any() and (crop > 200).any()  # ink on paper


def test_the_int8_copy_reads_as_the_full_model_does(tmp_path):
    import onnxruntime

    source = small_recogniser(tmp_path / "rec.onnx")
    target = tmp_path / "rec.int8.onnx"
    rec_int8.make_int8(source, target, "all")
    ops = {node.op_type for node in pytest.importorskip("onnx").load(str(target)).graph.node}
    assert "QLinearConv" in ops  # the convolution runs on integers
    x = np.stack([rec_int8_input(crop) for crop in rec_int8.calibration_lines()[:1]])
    full = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    int8 = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    assert int8.get_modelmeta().custom_metadata_map["character"] == "abcdef"  # the decoder's alphabet kept
    quantised = int8.run(None, {"x": x})[0]
    assert quantised.shape == full.shape
    assert np.abs(quantised - full).max() < 0.3
    assert (quantised.argmax(-1) == full.argmax(-1)).mean() >= 0.75  # a broken copy agrees on 1 in 7


def rec_int8_input(crop):
    from core.drafters.ocr_recognise import Recogniser

    return Recogniser.normalised(crop, crop.shape[1] / crop.shape[0])


def test_the_copy_is_made_once_and_reused(tmp_path):
    source = tmp_path / "rec.onnx"
    source.write_bytes(b"model one")
    made = []

    def make(src, target, variant):
        made.append(src)
        target.write_bytes(b"int8 of " + src.read_bytes())

    path, note = rec_int8.int8_model(source, tmp_path / "cache", make)
    assert note is None and path.parent == tmp_path / "cache" and path.read_bytes() == b"int8 of model one"
    assert path.name == rec_int8.cached_name(source) == rec_int8.cached_name(source, tuning.OCR_REC_INT8_VARIANT)
    assert rec_int8.int8_model(source, tmp_path / "cache", make) == (path, None)
    assert len(made) == 1  # reused
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name]  # no partial left
    source.write_bytes(b"model two")  # a new rapidocr: a new copy
    again, _ = rec_int8.int8_model(source, tmp_path / "cache", make)
    assert again != path and again.read_bytes() == b"int8 of model two" and len(made) == 2


def test_without_onnx_the_full_model_reads_and_the_user_is_told(tmp_path, monkeypatch):
    source = tmp_path / "rec.onnx"
    source.write_bytes(b"model")
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    path, note = rec_int8.int8_model(source, tmp_path / "cache")
    assert path == source
    assert "'onnx'" in note and "full precision" in note and "\n" not in note
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half made is kept


def test_a_failed_quantisation_keeps_the_full_model(tmp_path):
    source = tmp_path / "rec.onnx"
    source.write_bytes(b"model")

    def broken(src, target, variant):
        target.write_bytes(b"half")
        raise RuntimeError("shape inference failed\non node 3")

    path, note = rec_int8.int8_model(source, tmp_path / "cache", broken)
    assert path == source and "shape inference failed on node 3" in note
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_pipeline_reads_with_the_copy_only_where_asked_and_on_the_cpu(tmp_path, monkeypatch):
    full = model_file(REC_MODEL)
    monkeypatch.setenv("HSD_CACHE_DIR", str(tmp_path))
    cached = tmp_path / rec_int8.cached_name(full)
    cached.write_bytes(b"made before")  # in the cache already: found, not made again
    assert OcrPipeline(int8=False).recogniser_file(accelerated=False) == (full, None)
    assert OcrPipeline(int8=True).recogniser_file(accelerated=False) == (cached, None)
    assert OcrPipeline(int8=True).recogniser_file(accelerated=True) == (full, None)
    monkeypatch.setattr(tuning, "OCR_REC_INT8", True)
    assert OcrPipeline().int8
    monkeypatch.setattr(tuning, "OCR_REC_INT8", False)
    assert not OcrPipeline().int8


def test_the_setting_reaches_the_pipeline_from_a_drafter_spec():
    from core.drafters.rapidocr import RapidOCRDrafter

    name, options = parse_drafter_spec("rapidocr:int8=true")
    assert name == "rapidocr" and options == {"int8": True}
    assert RapidOCRDrafter(**options).int8 is True
    assert RapidOCRDrafter().int8 is None  # tuning.OCR_REC_INT8 decides
    assert tuning.OCR_REC_INT8 is False


def test_each_variant_keeps_the_layers_it_names_at_full_precision(tmp_path):
    onnx = pytest.importorskip("onnx")
    source = small_recogniser(tmp_path / "rec.onnx", convs=6)
    ops = {}
    for name in ("all", "inner", "convs", "convs-scanned"):
        rec_int8.make_int8(source, tmp_path / f"{name}.onnx", name)
        ops[name] = [node.op_type for node in onnx.load(str(tmp_path / f"{name}.onnx")).graph.node]
    assert ops["all"].count("QLinearConv") == 6 and "Conv" not in ops["all"] and "MatMul" not in ops["all"]
    # the first two and last two convolutions and the class head at full precision, the rest on int8
    assert ops["inner"].count("Conv") == 4 and ops["inner"].count("QLinearConv") == 2
    assert ops["inner"].count("MatMul") == 1
    assert ops["convs"].count("Conv") == 4 and ops["convs"].count("QLinearConv") == 2
    assert ops["convs"].count("MatMul") == 1  # matrix products are not its business
    assert ops["convs-scanned"] == ops["convs"]  # the same layers, other ranges
    quantised, kept = rec_int8.quantised_nodes(onnx.load(str(source)), rec_int8.VARIANTS["inner"])
    assert quantised == ["Conv.2", "Conv.3"] and kept == ["Conv.0", "Conv.1", "Conv.4", "Conv.5", "MatMul.0"]


def test_the_variants_are_cached_apart_and_an_unknown_one_reads_at_full_precision(tmp_path, monkeypatch):
    source = tmp_path / "rec.onnx"
    source.write_bytes(b"model")
    asked = []

    def make(src, target, variant):
        asked.append(variant)
        target.write_bytes(variant.encode())

    names = {rec_int8.cached_name(source, name) for name in rec_int8.VARIANTS}
    assert len(names) == len(rec_int8.VARIANTS)
    first, _ = rec_int8.int8_model(source, tmp_path / "cache", make, variant="inner")
    second, _ = rec_int8.int8_model(source, tmp_path / "cache", make, variant="convs")
    assert first.read_bytes() == b"inner" and second.read_bytes() == b"convs" and asked == ["inner", "convs"]
    monkeypatch.setattr(tuning, "OCR_REC_INT8_VARIANT", "convs")
    assert rec_int8.int8_model(source, tmp_path / "cache", make) == (second, None) and len(asked) == 2
    path, note = rec_int8.int8_model(source, tmp_path / "cache", make, variant="int4")
    assert path == source and "'int4'" in note and "full precision" in note and "inner" in note


def test_the_default_variant_is_a_known_one():
    assert tuning.OCR_REC_INT8_VARIANT in rec_int8.VARIANTS


def test_scanned_calibration_lines_are_grey_blurred_and_the_same_each_time():
    crop = rec_int8.calibration_lines()[0]
    scanned = rec_int8.scanned_copy(crop, 5)
    assert scanned.shape == crop.shape and scanned.dtype == np.uint8
    assert np.array_equal(scanned, rec_int8.scanned_copy(crop, 5))
    assert not np.array_equal(scanned, rec_int8.scanned_copy(crop, 6))
    assert np.median(scanned) < 240 <= np.median(crop)  # grey paper
    assert (scanned < 128).any()  # the ink still there
