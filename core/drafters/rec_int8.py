"""An int8 copy of the OCR recogniser, made once on the user's machine from the model rapidocr ships.

ONNX Runtime's static quantisation (``onnxruntime.quantization.quantize_static``: its convolutions
and matrix products on 8-bit integers, weights per channel) needs the ranges of the network's
activations; they are measured on text lines drawn here, not read from the user's documents, so the
copy is the same on every machine with the same rapidocr and ONNX Runtime: Latin, digits and CJK in
PyMuPDF's own fonts (``calibration_lines``), each scaled and normalised as the recogniser reads a
crop. Nothing is downloaded. The quantisation tools need the ``onnx`` package (the ``int8`` extra);
without it, or where the copy cannot be made, the full-precision model is read and the user is told
why in one line.

The copy is cached in ``cache_dir()`` (``$HSD_CACHE_DIR``, else the platform's user cache folder
under ``hsd-studio``), named after the source model's digest and ONNX Runtime's version: a new
rapidocr or ONNX Runtime makes a new copy, an unchanged one reuses it. It is written to a temporary
name and renamed, so a copy interrupted half way is never read.

``VARIANTS`` name which layers stay at full precision and which lines calibrate the rest;
``tuning.OCR_REC_INT8_VARIANT`` picks one, each cached under its own name. On the generated scan
set every variant took a fifth less of the recogniser's CPU than the full model and its drafts cost
passes (``convs-scanned``: 19 % less CPU, 40 of 831 lines read differently, hsd passes 1073 -> 1122
on 52 pages; docs/drafters.md, "The int8 recogniser"); ``tuning.OCR_REC_INT8`` says whether the
drafter uses a copy (off).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from core import tuning

#: What the calibration lines say: the recogniser's common scripts, digits and punctuation.
CALIBRATION_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "Annual report 2023: revenue rose 12.5% to $4,380 million (Table 3).",
    "Section 4.2 -- Results and discussion, see Fig. 7 and ref. [18].",
    "VOLUME XII, NO. 4  |  MONDAY, MARCH 6, 1922  |  PRICE TWO CENTS",
    "e-mail: office@example.org; tel. +49 (0)30 1234-567",
    "Die Verwaltung beschloss am 3. Mai die Änderung der Satzung.",
    "x = (a + b) / 2,  f(x) = 3x^2 - 4x + 1,  n >= 10",
    "本公司董事会及全体董事保证本公告内容不存在任何虚假记载。",
    "二〇二三年度报告 第三节 管理层讨论与分析",
    "東京都千代田区 令和五年四月一日 発行",
    "1   2   3   4   5   6   7   8   9   0",
    "SUMMARY OF ACCOUNTS FOR THE YEAR ENDED 31 DECEMBER",
)
#: (PyMuPDF font name, font size in points) the lines are drawn in, at 200 dpi.
#: The PDF base-14 fonts draw the Latin-1 lines only; ``china-s`` (PyMuPDF's built-in CJK font) all.
CALIBRATION_FONTS = (("helv", 10), ("tiro", 11), ("cour", 9), ("hebo", 14), ("china-s", 10), ("tiro", 7))
CALIBRATION_DPI = 200


class Variant(NamedTuple):
    """Which of the recogniser's layers its int8 copy computes on integers, and on what lines
    their activation ranges are measured."""

    description: str
    op_types: tuple[str, ...]  # the operators quantised
    fp32_ends: int  # this many of the first and of the last convolutions kept at full precision
    fp32_head: bool  # the class head (the last matrix product: one score a character) kept at full precision
    scanned: bool  # the calibration lines also as a scan shows them (``scanned_copy``)


#: The int8 copies the drafter can read with (``tuning.OCR_REC_INT8_VARIANT`` picks one).
VARIANTS = {
    "all": Variant("every convolution and matrix product on int8", ("Conv", "MatMul"), 0, False, False),
    "inner": Variant("convolutions and matrix products on int8 but the first two and last two convolutions "
                     "and the class head", ("Conv", "MatMul"), 2, True, False),
    "convs": Variant("convolutions on int8 but the first two and the last two", ("Conv",), 2, False, False),
    "convs-scanned": Variant("as convs, ranges also measured on the lines blurred and noised as a scan",
                             ("Conv",), 2, False, True),
}


def variant_of(name: str | None) -> tuple[str, Variant]:
    """``(name, Variant)`` for ``name`` (None: ``tuning.OCR_REC_INT8_VARIANT``); ValueError naming
    the known ones for any other."""
    name = tuning.OCR_REC_INT8_VARIANT if name is None else name
    if name not in VARIANTS:
        raise ValueError(f"unknown int8 recogniser variant {name!r}; choose one of: {', '.join(VARIANTS)}")
    return name, VARIANTS[name]


def cache_dir() -> Path:
    """Where the product keeps what it makes once and reuses: ``$HSD_CACHE_DIR``, else the
    platform's user cache folder (``%LOCALAPPDATA%``, ``~/Library/Caches``, ``$XDG_CACHE_HOME``
    or ``~/.cache``) under ``hsd-studio``."""
    own = os.environ.get("HSD_CACHE_DIR")
    if own:
        return Path(own).expanduser()
    if sys.platform.startswith("win"):
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hsd-studio"


def cached_name(source: Path, variant: str | None = None) -> str:
    """The copy's file name: the source's name, the variant's, the source's digest and ONNX
    Runtime's version."""
    import onnxruntime

    name, _ = variant_of(variant)
    digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]
    return f"{Path(source).stem}.int8-{name}-{digest}-ort{onnxruntime.__version__}.onnx"


def calibration_lines() -> list[np.ndarray]:
    """Text lines drawn with PyMuPDF (``CALIBRATION_TEXTS`` in ``CALIBRATION_FONTS``), each an
    RGB array cut to its line, as the detector's crops are."""
    import pymupdf

    crops = []
    for font, size in CALIBRATION_FONTS:
        doc = pymupdf.open()
        texts = [t for t in CALIBRATION_TEXTS if font.startswith("china") or all(ord(c) < 256 for c in t)]
        page = doc.new_page(width=40 * size, height=3 * size * len(texts))
        for i, text in enumerate(texts):
            page.insert_text((size, 3 * size * (i + 0.7)), text, fontname=font, fontsize=size)
        scale = CALIBRATION_DPI / 72
        pix = page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), colorspace=pymupdf.csRGB, alpha=False)
        pixels = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, 3)
        for i in range(len(texts)):
            top, bottom = (round(3 * size * (i + f) * scale) for f in (0.2, 0.95))
            ink = np.nonzero((pixels[top:bottom] < 128).any(axis=(0, 2)))[0]
            if len(ink):
                left, right = max(0, ink[0] - round(size * scale * 0.3)), ink[-1] + round(size * scale * 0.3)
                crops.append(np.ascontiguousarray(pixels[top:bottom, left:right]))
        doc.close()
    return crops


def scanned_copy(crop: np.ndarray, seed: int) -> np.ndarray:
    """``crop`` as a scan shows a printed line: paper a little grey, the ink's edges blurred,
    the pixels noised (a fixed seed: the same copy on every machine)."""
    import cv2

    paper = crop.astype(np.float32) * (225 / 255) + 10
    blurred = cv2.GaussianBlur(paper, (0, 0), 0.8)
    noise = np.random.default_rng(seed).normal(0, 10, blurred.shape[:2])[..., None]
    return np.clip(blurred + noise, 0, 255).astype(np.uint8)


def quantised_nodes(model, variant: Variant) -> tuple[list[str], list[str]]:
    """``(quantised, kept)``: the names of ``model``'s nodes the variant computes on int8 and of
    those of its operator types it keeps at full precision (its first and last convolutions, its
    class head)."""
    nodes = [node for node in model.graph.node if node.op_type in variant.op_types]
    convs = [node.name for node in model.graph.node if node.op_type == "Conv"]
    kept = set(convs[:variant.fp32_ends] + convs[len(convs) - variant.fp32_ends:]) if variant.fp32_ends else set()
    matmuls = [node.name for node in model.graph.node if node.op_type == "MatMul"]
    if variant.fp32_head and matmuls:
        kept.add(matmuls[-1])
    return [n.name for n in nodes if n.name not in kept], [n.name for n in nodes if n.name in kept]


def make_int8(source: Path, target: Path, variant: str | None = None) -> None:
    """Quantise ``source`` (the recogniser's ONNX model) into ``target`` as ``variant`` says
    (``VARIANTS``; None: ``tuning.OCR_REC_INT8_VARIANT``): its layers on int8 weights (per channel)
    and uint8 activations whose ranges were measured on ``calibration_lines``. Raises ImportError
    without the ``onnx`` package."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    from core.drafters.ocr_recognise import Recogniser

    _, chosen = variant_of(variant)
    name = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"]).get_inputs()[0].name
    crops = calibration_lines()
    if chosen.scanned:
        crops += [scanned_copy(crop, seed) for seed, crop in enumerate(crops)]
    batches = [Recogniser.normalised(crop, max(1.0, crop.shape[1] / crop.shape[0]))[None] for crop in crops]
    _, kept = quantised_nodes(onnx.load(str(source)), chosen)

    class Lines(CalibrationDataReader):
        def __init__(self):
            self.left = iter(batches)

        def get_next(self):
            batch = next(self.left, None)
            return None if batch is None else {name: batch}

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # its advice to the developer ("consider pre-processing") is no news to a user
    try:
        quantize_static(str(source), str(target), Lines(), quant_format=QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        op_types_to_quantize=list(chosen.op_types), nodes_to_exclude=kept,
                        calibrate_method=CalibrationMethod.MinMax, extra_options={"ActivationSymmetric": False})
    finally:
        logging.disable(previous)


def int8_model(source: Path, folder: Path | None = None, make=make_int8,
               variant: str | None = None) -> tuple[Path, str | None]:
    """``(model, note)``: the int8 copy of ``source`` as ``variant`` says (None:
    ``tuning.OCR_REC_INT8_VARIANT``) in ``folder`` (default ``cache_dir()``), made now where it is
    not there yet, and None; or, where it cannot be made (an unknown variant, ``onnx`` missing,
    the folder not writable, the quantisation failing), ``source`` itself and one line saying why.
    ``make(source, target, variant)``: what makes the copy (``make_int8``)."""
    folder = cache_dir() if folder is None else Path(folder)
    try:
        variant, _ = variant_of(variant)
    except ValueError as exc:
        return source, f"OCR recogniser at full precision: {exc}"
    try:
        target = folder / cached_name(source, variant)
    except OSError as exc:
        return source, f"OCR recogniser at full precision: {source} cannot be read ({exc})"
    if target.is_file():
        return target, None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=".hsd-", suffix=".partial", dir=folder)
        os.close(fd)
    except OSError as exc:
        return source, f"OCR recogniser at full precision: no int8 copy can be kept in {folder} ({exc})"
    try:
        make(Path(source), Path(partial), variant)
        os.replace(partial, target)
    except ImportError as exc:
        return source, (f"OCR recogniser at full precision: its int8 copy needs the 'onnx' package "
                        f"(pip install \"hsd-studio[int8]\"; {exc})")
    except Exception as exc:  # noqa: BLE001 -- any failure to quantise: the full model still drafts
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        return source, f"OCR recogniser at full precision: its int8 copy could not be made ({reason})"
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return target, None
