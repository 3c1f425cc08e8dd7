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

On the generated scan set the copy took a quarter less of the recogniser's CPU than the full model
and read 89 % of lines the same, and its drafts cost passes (docs/drafters.md, "The int8
recogniser"); ``tuning.OCR_REC_INT8`` says whether the drafter uses it (off).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

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


def cached_name(source: Path) -> str:
    """The copy's file name: the source's name, its digest and ONNX Runtime's version."""
    import onnxruntime

    digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]
    return f"{Path(source).stem}.int8-{digest}-ort{onnxruntime.__version__}.onnx"


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


def make_int8(source: Path, target: Path) -> None:
    """Quantise ``source`` (the recogniser's ONNX model) into ``target``: convolutions and matrix
    products on int8 weights (per channel) and uint8 activations whose ranges were measured on
    ``calibration_lines``. Raises ImportError without the ``onnx`` package."""
    import onnx  # noqa: F401  (the quantisation tools' own dependency: missing, it fails here)
    import onnxruntime
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    from core.drafters.ocr_recognise import Recogniser

    name = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"]).get_inputs()[0].name
    batches = [Recogniser.normalised(crop, max(1.0, crop.shape[1] / crop.shape[0]))[None]
               for crop in calibration_lines()]

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
                        op_types_to_quantize=["Conv", "MatMul"], calibrate_method=CalibrationMethod.MinMax,
                        extra_options={"ActivationSymmetric": False})
    finally:
        logging.disable(previous)


def int8_model(source: Path, folder: Path | None = None, make=make_int8) -> tuple[Path, str | None]:
    """``(model, note)``: the int8 copy of ``source`` in ``folder`` (default ``cache_dir()``), made
    now where it is not there yet, and None; or, where it cannot be made (``onnx`` missing, the
    folder not writable, the quantisation failing), ``source`` itself and one line saying why.
    ``make(source, target)``: what makes the copy (``make_int8``)."""
    folder = cache_dir() if folder is None else Path(folder)
    try:
        target = folder / cached_name(source)
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
        make(Path(source), Path(partial))
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
