"""A page's OCR, stage by stage, from rapidocr's parts (PP-OCRv6 detector and recogniser, no classifier).

The stages, and what each costs on a scan page (2 CPU cores, generated scan set, 200-300 dpi):

1. **prepare**: the render capped at 2000 px a side (rapidocr's ``resize_image_within_bounds``) and,
   for a wide strip, padded (``apply_vertical_padding``). A few ms.
2. **detect**: the DB detector on the page scaled to ``det_side`` (``DetPreProcess``, one ONNX
   Runtime run, ``DBPostProcess``, rapidocr's box sort). 0.2-0.5 s.
3. **crop**: each detected quadrilateral cut out upright (``get_rotate_crop_image``). Tens of ms.
4. **recognise**: each crop scaled to 48 px high and read by the CTC recogniser, in reading order,
   each line taken by the next free one of ``workers`` threads (ONNX Runtime releases the GIL
   while it runs; ``LineReads``: none starts a line while a stop is decided) and told a chunk at
   a time as the chunks' lines come (``core.drafters.line_stream``; no worker waits for the rest
   of a chunk: 7 % of the recognition's wall on 2 cores, simulated
   on the 52 pages of the generated scan set's stratified subset); CJK documents' lines squeezed
   (``core.drafters.squeeze``); each read's runner-up letters kept (``core.drafters.second_readings``).
   Most of a page: 10-40 ms a line.
5. **finish**: empty lines and lines under rapidocr's text score dropped, the boxes taken back to
   the render's pixels, each character's box computed (``core.drafters.char_boxes``). A few ms.

``OcrPipeline.stage_seconds`` holds the last page's seconds per stage. Every step is a call into
rapidocr's classes or functions, or ours; no rapidocr object is altered.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core import tuning
from core.drafters import char_boxes, line_stream, squeeze
from core.drafters.ocr_recognise import Recogniser
from core.errors import DrafterUnavailableError

#: rapidocr's defaults its own pipeline uses (``rapidocr/config.yaml``, ``Global`` and ``Det``).
MAX_SIDE, MIN_SIDE = 2000, 30
PAD_MIN_HEIGHT, PAD_WIDTH_HEIGHT_RATIO = 30, 8
TEXT_SCORE = 0.5
DET_SETTINGS = {"thresh": 0.3, "box_thresh": 0.5, "max_candidates": 1000, "unclip_ratio": 1.6,
                "use_dilation": True, "score_mode": "fast"}
DET_MODEL, REC_MODEL = "PP-OCRv6_det_small.onnx", "PP-OCRv6_rec_small.onnx"


@dataclass
class PageText:
    """What the OCR read on a page: per line (in the detector's order, empty and low-score lines
    dropped) its quadrilateral in the render's pixels, text, score and characters
    (``[(character, confidence, corners)]``; all lines' empty where one line has none, as rapidocr
    returns them)."""

    boxes: list = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    chars: list = field(default_factory=list)
    unread: list[int] = field(default_factory=list)  # the detector's lines a stop left unread


@dataclass
class Detection:
    """The detector's lines on one page: their crops, their quadrilaterals in the detector's
    (capped, padded) image, in the render's pixels as rapidocr returns them (kept inside the
    image) and as the early lines place them (``line_stream.page_quads``)."""

    crops: list[np.ndarray]
    boxes: np.ndarray
    page_boxes: np.ndarray
    quads: np.ndarray
    shape: tuple[int, int]
    ratios: tuple[float, float]


def model_file(name: str) -> Path:
    """A model file shipped inside the rapidocr wheel (``DrafterUnavailableError`` without it)."""
    try:
        import rapidocr
    except ImportError as exc:
        raise DrafterUnavailableError(f"the rapidocr drafter needs the 'rapidocr' package ({exc})") from None
    path = Path(rapidocr.__file__).parent / "models" / name
    if not path.exists():
        raise DrafterUnavailableError(f"{path} is missing: reinstall rapidocr")
    return path


def default_workers(cores: int | None = None) -> int:
    """Recognition threads for ``cores`` CPU cores (None: the cores this process may run on): all
    of them. The drafting process is niced, so a decode beside it keeps its core; and where the
    model decodes on the CPU a page is drafted before its decode, not beside it. One core left idle
    made a scan's drafts come later on a 2-core machine: the 12 OmniDocBench scans on the simulated
    GPU (20 ms a pass, idle) took more passes before their drafts with one worker than with two."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores)


def runtime_options(threads: int):
    """rapidocr's own ONNX Runtime options (full graph optimisation) with a memory arena (crops change
    shape every call) and ``threads`` intra-op threads (0: ONNX Runtime's choice)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.enable_cpu_mem_arena = True
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    # Threads that spin while waiting for work take a core from the decode and from other programs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def detector_input(pre, image: np.ndarray) -> np.ndarray | None:
    """What rapidocr's ``DetPreProcess`` (``pre``) makes of ``image`` for the detector, the same
    bits: its resize, then each channel's byte values looked up in a table of their normalised
    values (computed as ``DetPreProcess.normalize`` computes a pixel's, in float64 and then
    float32) instead of normalising every pixel in float64: a third of the time."""
    resized = pre.resize(image)
    if resized is None:
        return None
    if resized.dtype != np.uint8 or resized.ndim != 3:
        return np.expand_dims(pre.permute(pre.normalize(resized)), axis=0).astype(np.float32)
    table = pre.normalize(np.arange(256, dtype=np.uint8)[:, None]).astype(np.float32)  # (256, channels)
    out = np.empty((1, resized.shape[2]) + resized.shape[:2], dtype=np.float32)
    for channel in range(resized.shape[2]):
        out[0, channel] = table[:, channel][resized[:, :, channel]]
    return out


class OcrPipeline:
    """Detection and recognition of scan pages (module docstring). ``workers``: recognition threads
    (None: ``default_workers``); ``threads``: each recognition run's own threads (0: one; the
    detector runs on ``workers * threads``); ``device``: "auto" or "cpu"
    (``core.drafters.accelerators``); ``int8``: read the lines with the recogniser's int8 copy
    (``core.drafters.rec_int8``) on the CPU (None: ``tuning.OCR_REC_INT8``). Models load on first
    use; one pipeline reads one page at a time."""

    def __init__(self, det_side: int | None = None, workers: int | None = None, device: str = "auto",
                 threads: int = 0, squeeze_cjk: bool = True, int8: bool | None = None):
        self.det_side = tuning.DET_MAX_SIDE if det_side is None else det_side
        self.int8 = tuning.OCR_REC_INT8 if int8 is None else bool(int8)
        self.workers = default_workers() if workers is None else max(1, int(workers))
        self.device = device
        self.threads = threads or 1
        self.squeeze = squeeze.SqueezePolicy() if squeeze_cjk else None
        self.note: str | None = None  # where the models run, for the user (``core.drafters.accelerators``)
        self.stage_seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        self._det = self._pre = self._post = self._recogniser = self._pool = None
        self._reads: line_stream.PageReads | None = None  # the page being read, or read last
        self._beside_decode = False  # the page being read may be stopped: its decode runs meanwhile
        self._shared_from: OcrPipeline | None = None  # the pipeline whose models this one uses

    # -- models --------------------------------------------------------------------------------
    def load(self) -> None:
        with self._lock:
            if self._recogniser is not None:
                return
            from rapidocr.ch_ppocr_det.utils import DBPostProcess, DetPreProcess

            from core.drafters.accelerators import choose_providers, make_session

            # The accelerator where there is one (a model it cannot open falls back to the CPU,
            # and the choice passed on sends the next model straight there).
            choice = choose_providers(self.device)
            # the detector's one run a page on as many threads as there are workers
            self._det, choice = make_session(model_file(DET_MODEL), choice, runtime_options(self.workers * self.threads))
            recogniser, int8_note = self.recogniser_file(choice.accelerated)
            self._recogniser = Recogniser(make_session(recogniser, choice, runtime_options(self.threads))[0])
            self._pre = DetPreProcess(self.det_side, "max", [0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
            self._post = DBPostProcess(**DET_SETTINGS)
            self.note = "; ".join(n for n in (choice.note, int8_note) if n) or None
            if self.workers > 1:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="ocr-rec")

    def recogniser_file(self, accelerated: bool) -> tuple[Path, str | None]:
        """The recogniser's model file, and a line for the user where it is not the one asked for:
        the int8 copy where ``int8`` is on and the models run on the CPU (an accelerator runs the
        full model: int8 arithmetic is what a CPU core lacks), else rapidocr's own."""
        full = model_file(REC_MODEL)
        if not self.int8 or accelerated:
            return full, None
        from core.drafters.rec_int8 import int8_model

        return int8_model(full)

    def close(self) -> None:
        if self._pool is not None and self._shared_from is None:
            self._pool.shutdown(wait=False)
        self._pool = None

    def with_det_side(self, det_side: int) -> "OcrPipeline":
        """A pipeline detecting at ``det_side`` on this one's models and worker threads (loaded
        now where they are not): a second detector size costs no second copy of the models
        (``AutoDrafter``'s lines-only step detects at twice the usual size). It reads one page at a
        time as this one does, with its own CJK policy and ``stage_seconds``; closing it leaves
        this one's workers running."""
        from rapidocr.ch_ppocr_det.utils import DetPreProcess

        self.load()
        twin = OcrPipeline(det_side=det_side, workers=self.workers, device=self.device, threads=self.threads,
                           squeeze_cjk=self.squeeze is not None, int8=self.int8)
        twin._det, twin._recogniser, twin._post, twin._pool = self._det, self._recogniser, self._post, self._pool
        twin._pre = DetPreProcess(det_side, "max", [0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
        twin.note, twin._shared_from = self.note, self
        return twin

    def begin_document(self) -> None:
        if self.squeeze is not None:
            self.squeeze.begin_document()

    # -- stages --------------------------------------------------------------------------------
    def detect(self, pixels: np.ndarray) -> Detection:
        """Stages 1-3: the page's lines found and cut out."""
        from rapidocr.ch_ppocr_det import TextDetector
        from rapidocr.utils.load_image import LoadImage
        from rapidocr.utils.process_img import (apply_vertical_padding, get_rotate_crop_image,
                                                map_boxes_to_original, resize_image_within_bounds)

        self.load()
        start = time.perf_counter()
        image = LoadImage()(pixels)
        capped, ratio_h, ratio_w = resize_image_within_bounds(image, MIN_SIDE, MAX_SIDE)
        record = {"preprocess": {"ratio_h": ratio_h, "ratio_w": ratio_w}}
        padded, record = apply_vertical_padding(capped, record, PAD_WIDTH_HEIGHT_RATIO, PAD_MIN_HEIGHT)
        prepared = time.perf_counter()
        boxes = np.zeros((0, 4, 2), dtype=np.float32)
        net_input = detector_input(self._pre, padded)
        if net_input is not None:
            preds = self._det.run(None, {self._det.get_inputs()[0].name: net_input})[0]
            found, _ = self._post(preds, padded.shape[:2])
            if len(found):
                boxes = TextDetector.sorted_boxes(found)
        detected = time.perf_counter()
        crops = [get_rotate_crop_image(padded, box.copy()) for box in boxes]
        quads = line_stream.page_quads(boxes, record)
        page_boxes = map_boxes_to_original(boxes.copy(), record, *image.shape[:2]) if len(boxes) else boxes
        self.stage_seconds.update(prepare=prepared - start, detect=detected - prepared,
                                  crop=time.perf_counter() - detected)
        return Detection(crops, boxes, page_boxes, quads, image.shape[:2], (ratio_h, ratio_w))

    def recognise(self, found: Detection, tell=None, stopped=None) -> PageText:
        """Stages 4-5: the lines read (``tell([(index, text)])`` told each chunk as it is read,
        ``index`` its place in the detector's list: ``found.quads[index]``) and finished;
        ``stopped()``: no more lines read once it says so (``line_stream.PageReads``: the lines
        left are the page's ``unread``; a document's sample of its script is read whole)."""
        start = time.perf_counter()
        self._beside_decode = stopped is not None
        learning = self.squeeze is not None and not self.squeeze.learned
        reads = self._reads = line_stream.PageReads(found.crops, self._read, found.quads, tell, stopped,
                                                    whole_first=learning)
        try:
            if found.crops:
                if self.squeeze is not None:
                    self.squeeze.read_page(reads)
                else:
                    reads.read(list(range(len(found.crops))), 1.0)
        finally:
            reads.let_go()
        recognised = time.perf_counter()
        page = self._finish(found, reads)
        page.unread = reads.unread()
        self.stage_seconds.update(recognise=recognised - start, finish=time.perf_counter() - recognised)
        return page

    def read(self, pixels: np.ndarray, tell=None) -> PageText:
        return self.recognise(self.detect(pixels), tell)

    def _read(self, crops: list[np.ndarray]):
        """``crops`` read in batches of ``tuning.OCR_REC_BATCH``, spread over the workers. One a
        batch (the default): the reads in the crops' order, each line taken by the next free worker
        in that order and yielded as soon as it and the lines before it are read
        (``line_stream.PageReads`` tells a chunk while the workers read the next; ``LineReads``)."""
        batch = max(1, tuning.OCR_REC_BATCH)
        if batch == 1 and self._pool is not None and len(crops) > 1:
            return LineReads(self._recogniser.read, crops, self._pool, self.read_workers(self._beside_decode))
        run = self._pool.map if self._pool is not None and len(crops) > 1 else map
        if batch == 1:
            return (reads[0] for reads in run(self._recogniser.read, [[crop] for crop in crops]))
        return self._recogniser.read_batches(crops, batch, run)

    def read_workers(self, beside_decode: bool) -> int:
        """The threads that read a page's lines: all ``workers``, but one fewer (one at least)
        where ``tuning.OCR_LEAVE_DECODE_CORE`` is on and the page is read beside its decode (its
        reading may be stopped when the decode ends): the decode's thread, waking between two
        passes, finds a core no recognition thread holds."""
        if tuning.OCR_LEAVE_DECODE_CORE and beside_decode:
            return max(1, self.workers - 1)
        return self.workers

    def _finish(self, found: Detection, reads: "line_stream.PageReads") -> PageText:
        """rapidocr's last steps (``RapidOCR.build_final_output``): lines read empty dropped, the
        characters' boxes, lines under ``TEXT_SCORE`` dropped."""
        keep = [i for i, text in enumerate(reads.texts) if text and text.strip()]
        if not keep:
            return PageText()
        ratio_h, ratio_w = found.ratios
        shapes = [(round(found.crops[i].shape[0] * ratio_h), round(found.crops[i].shape[1] * ratio_w)) for i in keep]
        boxes = found.page_boxes[keep]
        texts = [reads.texts[i] for i in keep]
        # rapidocr's ``calc_word_boxes`` leaves out lines without character boxes and then pairs
        # the rest with the lines by position; its caller drops them all where that miscounts.
        chars = [c for c in char_boxes.page_char_boxes(shapes, boxes, texts, [reads.words[i] for i in keep]) if c]
        page = PageText()
        for k, i in enumerate(keep):
            if reads.scores[i] < TEXT_SCORE:
                continue
            page.boxes.append(boxes[k])
            page.texts.append(texts[k])
            page.scores.append(reads.scores[i])
            if k < len(chars) and chars[k]:
                page.chars.append(chars[k])
        if len(page.chars) != len(page.texts):
            page.chars = [()] * len(page.texts)
        return page

    @property
    def words(self) -> dict:
        """The second readings of the page read last (``core.drafters.second_readings``)."""
        return self._reads.letters if self._reads is not None else {}


class LineReads:
    """An iterator of ``read([crop])[0]`` for each of ``crops`` in their order, the crops taken in
    that order by ``workers`` tasks on ``pool`` (each reads the next crop not started), each read
    yielded once it and those before it are read. For a page whose reading may stop
    (``line_stream.PageReads``): ``hold`` keeps the tasks from starting a crop until ``release``
    (while the stop is decided, no line is started that the stop would throw away), and ``close``
    starts no further crop and returns the reads done beyond those yielded (the lines the workers
    read ahead: a stop that still wants one of them takes it instead of reading it again).
    A read that raises raises where it is yielded."""

    def __init__(self, read, crops: list[np.ndarray], pool, workers: int):
        self._read, self._crops = read, crops
        self._lines: list = [None] * len(crops)
        self._errors: list = [None] * len(crops)
        self._done = [False] * len(crops)
        self._started = self._yielded = self._running = 0
        self._held = self._closed = False
        self._turn = threading.Condition()
        for _ in range(min(max(1, workers), len(crops))):
            pool.submit(self._work)

    def _work(self) -> None:
        while True:
            with self._turn:
                while self._held and not self._closed:
                    self._turn.wait()
                if self._closed or self._started >= len(self._crops):
                    return
                at = self._started
                self._started += 1
                self._running += 1
            line = error = None
            try:
                line = self._read([self._crops[at]])[0]
            except BaseException as exc:  # raised where the line is yielded
                error = exc
            with self._turn:
                self._lines[at], self._errors[at], self._done[at] = line, error, True
                self._running -= 1
                self._turn.notify_all()

    def __iter__(self):
        return self

    def __next__(self):
        with self._turn:
            at = self._yielded
            if at >= len(self._crops) or self._closed:  # closed: what was read ahead went back
                raise StopIteration
            if self._held:
                self._let_go()
            while not self._done[at]:
                self._turn.wait()
            self._yielded += 1
            if self._errors[at] is not None:
                raise self._errors[at]
            return self._lines[at]

    def hold(self) -> None:
        with self._turn:
            self._held = True

    def release(self) -> None:
        with self._turn:
            self._let_go()

    def _let_go(self) -> None:
        self._held = False
        self._turn.notify_all()

    def close(self) -> dict[int, object]:
        """No further crop started; ``{position: read}`` of the crops read beyond those yielded,
        those being read waited for."""
        with self._turn:
            self._closed = True
            self._turn.notify_all()
            while self._running:
                self._turn.wait()
            return {at: self._lines[at] for at in range(self._yielded, len(self._crops))
                    if self._done[at] and self._errors[at] is None}
