"""The OCR pipeline from rapidocr's parts (``core.drafters.ocr_pipeline``) reads what RapidOCR's own
pipeline reads, with one thread or several, and leaves rapidocr's objects as they are."""

from __future__ import annotations

import numpy as np
import pytest

from core import tuning
from core.drafters.ocr_pipeline import OcrPipeline, default_workers
from tests.core.drafters.test_char_boxes import _page_pixels

pytest.importorskip("rapidocr")


@pytest.fixture(scope="module")
def rapidocr_read():
    """RapidOCR's own pipeline, set up as the drafter's: detection at ``DET_MAX_SIDE``, lines
    read one at a time at their own width, no angle classifier. Each page is read once per module
    (the tests compare with its reading, never change it)."""
    from rapidocr import RapidOCR

    ocr = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "critical",
                           "Det.limit_type": "max", "Det.limit_side_len": tuning.DET_MAX_SIDE,
                           "Rec.rec_batch_num": 1,
                           "Rec.rec_img_shape": [3, 48, round(48 * tuning.OCR_REC_MIN_ASPECT)]})
    readings: dict = {}

    def read(pixels):
        key = (pixels.shape, pixels.tobytes())
        if key not in readings:
            readings[key] = ocr(pixels, use_cls=False, return_word_box=True, return_single_char_box=True)
        return readings[key]

    return read


@pytest.mark.parametrize("angle", [0.0, 1.5])
@pytest.mark.parametrize("workers", [1, 3])
def test_the_pipeline_reads_what_rapidocr_reads(rapidocr_read, angle, workers):
    pixels = _page_pixels(angle)
    want = rapidocr_read(pixels)
    pipeline = OcrPipeline(workers=workers, device="cpu", squeeze_cjk=False)
    got = pipeline.read(pixels)
    assert len(got.texts) >= 5 and got.texts == list(want.txts)
    assert got.scores == list(want.scores)
    assert np.array_equal(np.array(got.boxes), want.boxes)
    assert len(got.chars) == len(want.word_results)
    for got_line, want_line in zip(got.chars, want.word_results):
        assert [(c, s) for c, s, _ in got_line] == [(c, s) for c, s, _ in want_line]
        assert [sorted(map(tuple, b)) for _, _, b in got_line] == [sorted(map(tuple, b)) for _, _, b in want_line]
    assert set(pipeline.stage_seconds) == {"prepare", "detect", "crop", "recognise", "finish"}


class _Session:
    """An ONNX Runtime session's face: records each batch's shape and reads every line as ``a``."""

    def __init__(self):
        self.shapes: list[tuple] = []

    def get_inputs(self):
        return [type("Input", (), {"name": "x"})()]

    def get_modelmeta(self):
        return type("Meta", (), {"custom_metadata_map": {"character": "a\nb"}})()

    def run(self, outputs, feed):
        batch = feed["x"]
        self.shapes.append(batch.shape)
        columns = batch.shape[3] // 8
        preds = np.zeros((batch.shape[0], columns, 4), np.float32)
        preds[:, :, 0] = 1.0
        preds[:, 0, 0], preds[:, 0, 1] = 0.0, 1.0  # one "a" in the first column
        return [preds]


def test_batches_hold_lines_of_similar_width_and_results_keep_the_crops_order():
    from core.drafters.ocr_recognise import Recogniser

    model = _Session()
    recogniser = Recogniser(model)
    crops = [np.zeros((24, w, 3), np.uint8) for w in (400, 48, 390, 60, 200)]
    reads = recogniser.read_batches(crops, 2)
    assert [line.text for line in reads] == ["a"] * 5 and len(reads) == 5
    # sorted by width: (48, 60), (200, 390), (400): each batch padded to its own widest
    assert [shape[0] for shape in model.shapes] == [2, 2, 1]
    assert [shape[3] for shape in model.shapes] == [120, 780, 800]
    assert [shape[2] for shape in model.shapes] == [48, 48, 48]


def test_a_generated_scan_reads_as_rapidocr_reads_it(rapidocr_read, tmp_path):
    """A scanned page of the generated set (skewed, blurred, noisy, JPEG): the same lines as
    RapidOCR's own pipeline, read on two workers."""
    from core.documents import open_document
    from tools.bench import scan_set

    _, scan, _, _ = scan_set.make_page("article2", 0)
    (tmp_path / "scan.pdf").write_bytes(scan)
    with open_document(tmp_path / "scan.pdf") as doc:
        page = doc.page(0)
        pixels = np.asarray(page.render(dpi=200))
    want = rapidocr_read(pixels)
    got = OcrPipeline(workers=2, device="cpu", squeeze_cjk=False).read(pixels)
    assert len(got.texts) >= 40 and got.texts == list(want.txts) and got.scores == list(want.scores)
    assert np.array_equal(np.array(got.boxes), want.boxes)


def test_lines_read_in_batches_read_almost_as_alone(monkeypatch):
    """A batch pads its lines to the widest, which may change a line's reading: on this page one
    line of repeated letters reads differently (what batching does to drafts: docs/drafters.md)."""
    pixels = _page_pixels()
    alone = OcrPipeline(workers=1, device="cpu", squeeze_cjk=False).read(pixels)
    monkeypatch.setattr(tuning, "OCR_REC_BATCH", 4)
    batched = OcrPipeline(workers=2, device="cpu", squeeze_cjk=False).read(pixels)
    assert len(batched.texts) == len(alone.texts)
    assert sum(a != b for a, b in zip(alone.texts, batched.texts)) <= 1


def test_early_lines_are_told_with_their_place_in_the_detectors_list(monkeypatch):
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 2)
    pipeline = OcrPipeline(workers=2, device="cpu", squeeze_cjk=False)
    found = pipeline.detect(_page_pixels())
    told: list = []
    page = pipeline.recognise(found, told.append)
    assert len(told) >= 3 and all(len(chunk) <= 2 for chunk in told)
    indices = [index for chunk in told for index, _ in chunk]
    assert sorted(indices) == sorted(set(indices)) and len(indices) >= len(page.texts)
    assert {text for chunk in told for _, text in chunk} >= set(page.texts)
    assert all(0 <= index < len(found.quads) for index in indices)


def test_a_blank_page_reads_nothing():
    page = OcrPipeline(workers=2, device="cpu").read(np.full((400, 300, 3), 255, np.uint8))
    assert page.texts == [] and page.boxes == [] and page.chars == []


def test_workers_follow_the_cores():
    assert default_workers(8) == 8 and default_workers(2) == 2
    assert default_workers(1) == 1 and default_workers(0) == 1
    assert default_workers() >= 1
    assert OcrPipeline(workers=0).workers == 1


def test_an_accelerator_that_cannot_open_the_models_leaves_them_on_the_cpu(monkeypatch):
    from core.drafters import accelerators

    monkeypatch.setattr(accelerators, "available_providers", lambda: ["CUDAExecutionProvider", accelerators.CPU])
    pipeline = OcrPipeline(workers=1, device="auto")
    pipeline.load()  # this onnxruntime has no CUDA: the first model falls back, the second goes to the CPU
    assert pipeline.note and "CPU" in pipeline.note
    assert pipeline._det.get_providers() == [accelerators.CPU]
    assert pipeline._recogniser.model.get_providers() == [accelerators.CPU]
    assert OcrPipeline(workers=1, device="cpu").read(_page_pixels()).texts


def test_rapidocrs_classes_are_left_as_they_are():
    """Nothing of rapidocr's is replaced at run time: its recogniser, decoder and character boxes
    keep their own methods after a page is read."""
    from rapidocr import RapidOCR
    from rapidocr.cal_rec_boxes import CalRecBoxes
    from rapidocr.ch_ppocr_rec.utils import CTCLabelDecode

    before = (RapidOCR.__dict__.copy(), CalRecBoxes.__dict__.copy(), CTCLabelDecode.__dict__.copy())
    OcrPipeline(workers=2, device="cpu").read(_page_pixels())
    assert (RapidOCR.__dict__.copy(), CalRecBoxes.__dict__.copy(), CTCLabelDecode.__dict__.copy()) == before


def test_a_page_read_with_a_listener_reads_as_one_read_without(monkeypatch):
    """Lines handed to the workers in reading order, chunks told as they come: the same page."""
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 3)
    pixels = _page_pixels(1.5)
    quiet = OcrPipeline(workers=2, device="cpu", squeeze_cjk=False)
    want = quiet.read(pixels)
    told: list = []
    pipeline = OcrPipeline(workers=2, device="cpu", squeeze_cjk=False)
    got = pipeline.read(pixels, told.extend)
    assert got.texts == want.texts and got.scores == want.scores and got.chars == want.chars
    assert np.array_equal(np.array(got.boxes), np.array(want.boxes)) and pipeline.words == quiet.words
    assert {text for _, text in told} >= set(got.texts)


def test_a_second_detector_size_reads_on_the_same_models():
    pipeline = OcrPipeline(workers=2, device="cpu", squeeze_cjk=False)
    twin = pipeline.with_det_side(2 * tuning.DET_MAX_SIDE)
    assert twin.det_side == 2 * tuning.DET_MAX_SIDE and pipeline.det_side == tuning.DET_MAX_SIDE
    assert twin._det is pipeline._det and twin._recogniser is pipeline._recogniser and twin._pool is pipeline._pool
    pixels = _page_pixels()
    alone = OcrPipeline(det_side=2 * tuning.DET_MAX_SIDE, workers=2, device="cpu", squeeze_cjk=False).read(pixels)
    assert twin.read(pixels).texts == alone.texts
    twin.close()  # the workers are the first pipeline's: it still reads
    assert pipeline.read(pixels).texts


def test_the_lines_only_step_loads_no_second_copy_of_the_models():
    from core.drafters.auto import AutoDrafter

    auto = AutoDrafter(device="cpu")
    main = auto.choose_ocr()._ocr_engine()
    lines = auto._lines_only()._ocr_engine()
    assert lines is not main and lines.det_side == 2 * main.det_side
    assert lines._recogniser is main._recogniser and lines._det is main._det


@pytest.mark.parametrize("shape", [(2340, 1654, 3), (400, 3000, 3), (20, 40, 3)])
def test_the_detectors_input_is_rapidocrs_to_the_bit(shape):
    """The table-lookup normalisation gives the detector the bytes ``DetPreProcess`` gives it."""
    from rapidocr.ch_ppocr_det.utils import DetPreProcess

    from core.drafters.ocr_pipeline import detector_input

    pre = DetPreProcess(tuning.DET_MAX_SIDE, "max", [0.5, 0.5, 0.5], [0.5, 0.4, 0.3])
    image = np.random.default_rng(len(shape) + shape[0]).integers(0, 256, shape, dtype=np.uint8)
    want, got = pre(image), detector_input(pre, image)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def test_a_line_is_normalised_as_rapidocrs_recogniser_normalises_it():
    """``Recogniser.normalised`` (bytes looked up in a table) against rapidocr's own
    ``TextRecognizer.resize_norm_img``, to the bit, padded or at its own width."""
    from types import SimpleNamespace

    from rapidocr.ch_ppocr_rec.main import TextRecognizer

    from core.drafters.ocr_recognise import Recogniser

    rng = np.random.default_rng(3)
    for height, width, widest in [(30, 400, 400 / 30), (40, 50, 4.0), (52, 1700, 1700 / 52)]:
        crop = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        want = TextRecognizer.resize_norm_img(SimpleNamespace(rec_image_shape=[3, 48, 320]), crop, widest)
        got = Recogniser.normalised(crop, widest)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()


def test_the_recognisers_decoding_is_rapidocrs():
    """Each column's best class found once gives what rapidocr's decoder call gives (texts,
    scores, the columns of each character) and the same second readings."""
    from core.drafters.ocr_recognise import Recogniser
    from core.drafters.second_readings import torn_letters

    class Model(_Session):
        def run(self, outputs, feed):
            columns = feed["x"].shape[3] // 8
            logits = np.random.default_rng(columns).normal(size=(1, columns, 4)) * 3
            logits[:, ::2, 0] += 4  # blanks between letters
            probs = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
            return [probs.astype(np.float32)]

    recogniser = Recogniser(Model())
    for width in (120, 330, 800):
        crop = np.full((32, width, 3), 200, np.uint8)
        got = recogniser.read([crop])[0]
        preds = Model().run(None, {"x": recogniser.normalised(crop, width / 32)[None]})[0]
        (text, score), = recogniser.decoder(preds, True, wh_ratio_list=[width / 32], max_wh_ratio=width / 32)[0]
        info = recogniser.decoder(preds, True, wh_ratio_list=[width / 32], max_wh_ratio=width / 32)[1][0]
        assert text and (got.text, got.score) == (text, score)
        assert vars(got.info) == vars(info)
        assert got.torn == torn_letters(preds, [text], recogniser.decoder.character)[0]
