"""The recogniser's step of ``core.drafters.ocr_pipeline``: line crops in, text and letters out.

A batch of crops is scaled to the recogniser's 48 px height, each to its own width (never below
``tuning.OCR_REC_MIN_ASPECT`` times the height), padded with zeros to the batch's widest, normalised
as PaddleOCR trains (``x / 255 - 0.5) / 0.5``) and read in one ONNX Runtime run. rapidocr's
``CTCLabelDecode`` turns the columns into text, a score and the columns each character came from
(for ``core.drafters.char_boxes``); ``second_readings.torn_letters`` keeps the letters whose
runner-up class came close. A batch of one reads a line at its own width: what it reads then does
not depend on the lines around it (``tuning.OCR_REC_BATCH``).

``read`` may be called from several threads at once: ONNX Runtime sessions run concurrently and
release the GIL; the decoder keeps no state between calls.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from core import tuning
from core.drafters.second_readings import torn_letters

REC_HEIGHT = 48


class LineRead(NamedTuple):
    """One crop as the recogniser read it: text, mean confidence, rapidocr's ``WordInfo`` (the
    columns each character came from) and the letters it was torn on (``torn_letters``)."""

    text: str
    score: float
    info: object
    torn: list


class Recogniser:
    """PP-OCR's CTC recogniser on ``model``, the recogniser's ONNX model opened by ONNX Runtime (module docstring)."""

    def __init__(self, model):
        from rapidocr.ch_ppocr_rec.utils import CTCLabelDecode

        self.model = model
        self.input_name = model.get_inputs()[0].name
        characters = model.get_modelmeta().custom_metadata_map["character"].splitlines()
        self.decoder = CTCLabelDecode(character=characters)
        self.min_width = round(REC_HEIGHT * tuning.OCR_REC_MIN_ASPECT)

    def read(self, crops: list[np.ndarray]) -> list[LineRead]:
        """The crops read as one batch (padded to the widest of them)."""
        ratios = [crop.shape[1] / float(crop.shape[0]) for crop in crops]
        widest = max([self.min_width / REC_HEIGHT] + ratios)
        batch = (self.normalised(crops[0], widest)[None] if len(crops) == 1
                 else np.stack([self.normalised(crop, widest) for crop in crops]))
        preds = self.model.run(None, {self.input_name: batch})[0]
        # The best class of every column found once, for the decoder and the second readings:
        # rapidocr's decoder call would take the arg-max and the max of the columns again.
        best = preds.argmax(axis=2)
        best_prob = np.take_along_axis(preds, best[:, :, None], axis=2)[:, :, 0]
        lines, infos = self.decoder.decode(best, best_prob, True, ratios, widest, remove_duplicate=True)
        torn = torn_letters(preds, [text for text, _ in lines], self.decoder.character, best, best_prob)
        return [LineRead(text, score, info, letters) for (text, score), info, letters in zip(lines, infos, torn)]

    def read_batches(self, crops: list[np.ndarray], batch: int, run=map) -> list[LineRead]:
        """All ``crops`` read in batches of ``batch`` lines of similar width (sorted by their width
        to height, as rapidocr batches), ``run(self.read, batches)`` reading them (``map``, or a
        thread pool's); the results in the crops' order."""
        order = np.argsort(np.array([c.shape[1] / float(c.shape[0]) for c in crops]), kind="stable")
        groups = [order[i:i + batch].tolist() for i in range(0, len(crops), max(1, batch))]
        out: list = [None] * len(crops)
        for group, reads in zip(groups, run(self.read, [[crops[i] for i in group] for group in groups])):
            for i, line in zip(group, reads):
                out[i] = line
        return out

    @staticmethod
    def normalised(crop: np.ndarray, widest: float) -> np.ndarray:
        """``crop`` (H, W, 3) as the network's (3, 48, 48 * widest) input (rapidocr's
        ``TextRecognizer.resize_norm_img``)."""
        import cv2

        width = int(REC_HEIGHT * widest)
        own = min(width, int(math.ceil(REC_HEIGHT * crop.shape[1] / float(crop.shape[0]))))
        resized = cv2.resize(crop, (own, REC_HEIGHT))
        padded = np.zeros((3, REC_HEIGHT, width), dtype=np.float32)
        if resized.dtype == np.uint8:  # each byte's value looked up, not computed three times a pixel
            padded[:, :, :own] = PIXEL_VALUES[resized.transpose((2, 0, 1))]
        else:
            padded[:, :, :own] = (resized.astype("float32").transpose((2, 0, 1)) / 255 - 0.5) / 0.5
        return padded


def _pixel_values() -> np.ndarray:
    """The network's input value of each byte value, computed as rapidocr's
    ``resize_norm_img`` computes it for a pixel (float32, ``(x / 255 - 0.5) / 0.5``): the same bits."""
    values = np.arange(256, dtype=np.float32) / 255
    values -= 0.5
    values /= 0.5
    return values


#: ``_pixel_values``, the table ``Recogniser.normalised`` reads a crop's bytes through.
PIXEL_VALUES = _pixel_values()
