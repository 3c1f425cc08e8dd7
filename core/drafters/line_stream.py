"""A scan's OCR lines handed on as they are read, before its layout and reading order are done.

RapidOCR reads a page in three steps: the detector finds its lines (under a second), the
recogniser reads them (20-40 ms a line on two cores: most of a dense page's seconds), then the
layout model, the tables and the reading order turn the lines into regions. A decode beside the
drafter waits for the regions; the lines it could already speculate from are read long before.
``PageReads`` reads a page's line crops for ``core.drafters.ocr_pipeline`` and, while a listener
(``tell``) is set, a chunk at a time (``chunks``: two lines first, then up to
``tuning.EARLY_LINES_CHUNK``) in reading order (``layout.line_reading_order`` on the detector's boxes:
down one column before the next; the detector's own order, top to bottom across the columns,
where the boxes are not known; a document's first page reads a sample of its lines first,
``core.drafters.squeeze``), telling the listener each chunk's lines: each one's place in
the detector's list and its text. The pipeline gives each its detected box, so the decode can read
a line on its crop before the regions come (``core.stage1.Stage1Scheduler``). What is read does not
depend on the listener (each crop read once at its own width; ``tuning.OCR_REC_BATCH`` makes a
line's reading independent of its batch and of the order the lines are read in).

Why reading order: while its regions are not there, the decode of a scan waits on the recogniser
(it writes a line with good drafts faster than the recogniser reads one), and it writes the
first column first. Read row by row across two columns, the lines it needs come at half the
recogniser's pace. When all lines are there the order matters little (replay, the page row alone
on the lines of the 12 OmniDocBench scans: 3917 passes in the detector's order, 4027 in column
order): a line's continuation is found by the text matcher wherever it stands.

Stopped mid-way (``stopped``, asked between chunks): a page's decode that ends while its lines
are read can use no more of them (``core.draft_ahead``); the lines read are kept, the rest are
left unread (``unread``: their text None) and no further line is read. Where the page reads a
sample of its lines first to learn the document's script (``whole_first``: a document's first
page, ``core.drafters.squeeze``), that sample is read whole before a stop is heeded, so the
script is learned from the same lines however soon the decode ends. A stop may want some lines
read all the same (``stopped()`` answers a function of the texts read so far instead of True,
naming the detector's lines it wants; asked again after each of its reads until it wants no line
unread: a figure's place in the Markdown follows the last characters of the text before it,
``core.drafters.rapidocr.figure_lines``): those are still read, at the widths a whole read gives
them (read squeezed and again at full width alike), without telling the listener; no other.
While a stop is asked, a reader that can be held (``hold``/``release``:
``core.drafters.ocr_pipeline.LineReads``) starts no line, and a stop heeded hands back the lines
it read ahead of the chunk told (``close``): a line the stop still wants is taken from those where
it was read at the width it wants, never recognised twice.

    reads = PageReads(crops, recogniser.read, boxes, tell=told.extend)   # told [(index, text)]
    reads.read(range(len(crops)), 1.0)                                   # or squeeze.SqueezePolicy
"""

from __future__ import annotations

import numpy as np

from core import tuning
from core.drafters.layout import line_reading_order
from core.drafters.second_readings import keep_letters
from core.drafters.squeeze import crop_factor, squeeze_width


class PageReads:
    """What has been read of one page's line crops, read a part at a time (``read``); told to
    ``tell([(index, text)])`` chunk by chunk where it is set (module docstring). ``reader(crops)``
    reads crops (``core.drafters.ocr_recognise.LineRead`` each, in the crops' order; an iterator
    that yields each as it is read lets a chunk be told before the next is done); ``boxes``: the detector's
    quadrilaterals in the page image, for the reading order. ``letters``: the page's second
    readings so far (``core.drafters.second_readings.keep_letters``). A listener that raises is
    dropped (the page is still read); its lines are then only in the regions. ``stopped()``:
    asked between chunks; once it says so, no further line is read (``cut``; module docstring),
    except within the first ``read`` where ``whole_first``, and the lines it still wants where
    it answers a function of the texts (``want``; module docstring)."""

    def __init__(self, crops: list[np.ndarray], reader, boxes=None, tell=None, stopped=None,
                 whole_first: bool = False):
        n = len(crops)
        self.crops = crops
        self.texts: list = [None] * n
        self.scores: list = [0.0] * n
        self.words: list = [None] * n  # rapidocr's ``WordInfo``: the columns of each character
        self.squeezed = [False] * n
        self.factors = [1.0] * n  # the width factor each crop was last read at
        self.letters: dict = {}
        self.tell = tell
        self._reader = reader
        self._boxes = boxes
        self.stopped = stopped
        self.cut = False  # a stop was heeded: the lines whose text is None were not read
        self.want = None  # after a stop: texts -> the lines read all the same (module docstring)
        self.wanted: set[int] = set()  # the lines read after the stop so far
        # lines the reader read ahead of a stop, not taken: index -> (width factor, its read)
        self._spare: dict[int, tuple[float, object]] = {}
        self._whole_reads = 1 if whole_first else 0  # ``read`` calls read whole whatever ``stopped`` says

    def let_go(self) -> None:
        """The page is read: its reader and listeners are let go. Its pipeline keeps the page's reads
        after it (``OcrPipeline.words``), and through them its own ``_read`` and the drafter's
        listener, which hold the pipeline: a cycle that only Python's rare full collection freed,
        with the OCR models in it (hundreds of MB)."""
        self._reader = self.tell = self.stopped = None

    def unread(self) -> list[int]:
        """The detector's lines left unread by a stop (none where the page was read whole)."""
        return [i for i, text in enumerate(self.texts) if text is None] if self.cut else []

    def _stop_now(self, whole: bool, lines=None) -> bool:
        """Whether a stop is heeded now. ``lines``: the reader's reads under way, held while the
        stop is decided (no line started that a stop would throw away) where they can be."""
        if self.cut or whole or self.stopped is None:
            return self.cut
        hold = getattr(lines, "hold", None)
        if hold is not None:
            hold()
        try:
            answer = self.stopped()
            if answer is not None and answer is not False:
                self.cut = True
                if callable(answer):
                    self.want = answer
        finally:
            if hold is not None and not self.cut:
                lines.release()
        return self.cut

    def read(self, indices: list[int], factor: float) -> None:
        """Read the crops at ``indices``, squeezed to ``factor`` of their width
        (``squeeze.crop_factor``), in reading order and in chunks while a listener is set; after
        a stop, only those of them it wants (``want``)."""
        whole = self._whole_reads > 0
        self._whole_reads -= 1
        if not indices:
            return
        if self._stop_now(whole):
            self._read_wanted(indices, factor)
            return
        crops, before = [], [self.factors[i] for i in indices]
        for i in indices:
            self.factors[i] = crop_factor(self.crops[i], factor)
            crops.append(self.crops[i] if self.factors[i] == 1.0 else squeeze_width(self.crops[i], self.factors[i]))
        if self.tell is None and self.stopped is None:
            parts = [list(range(len(indices)))]
        else:
            order = self._reading_order(indices)
            parts = [[order[p] for p in part] for part in chunks(len(indices))]
        # One call for all the chunks, in the order they are told: the reader's threads go on to
        # the next chunk's lines while the last of a chunk is read (a wait at each chunk's end
        # left a core idle), and a chunk is told once its lines have come.
        flat = [p for part in parts for p in part]
        lines = iter(self._reader([crops[p] for p in flat]))
        close = getattr(lines, "close", None)
        try:
            for n, part in enumerate(parts):
                if n and self._stop_now(whole, lines):
                    # the lines not started yet are not read (the reader's pending work dropped);
                    # those it read ahead are kept for the stop's wanted lines
                    ahead = close() if close is not None else None
                    close = None
                    for at, line in (ahead.items() if isinstance(ahead, dict) else ()):
                        i = indices[flat[at]]
                        self._spare[i] = (self.factors[i], line)
                    later = [p for rest in parts[n:] for p in rest]
                    for p in later:
                        self.factors[indices[p]] = before[p]  # not taken: as it was last read
                    self._read_wanted([indices[p] for p in later], factor)
                    return
                for p in part:
                    self._take(indices[p], next(lines))
                self._tell([(indices[p], self.texts[indices[p]]) for p in part
                            if self.texts[indices[p]] and self.texts[indices[p]].strip()])
        finally:
            if close is not None:
                close()  # nothing left running where the reading ended early (a raise)

    def _read_wanted(self, indices: list[int], factor: float) -> None:
        """After a stop: the lines of ``indices`` the stop wants (``want``), read at ``factor`` as a
        whole read reads them (a line's reading depends on neither its batch nor its order), not
        told (the decode that could use them has ended). ``want`` is asked again with what they
        said until it wants no line of ``indices`` left unread."""
        if self.want is None:
            return
        tried: set[int] = set()
        while True:
            want = set(self.want(self.texts))
            wanted = [i for i in indices if i in want and i not in tried
                      and (self.texts[i] is None or self.factors[i] != crop_factor(self.crops[i], factor))]
            if not wanted:
                return
            tried.update(wanted)
            self.wanted.update(wanted)
            for i in wanted:
                self.factors[i] = crop_factor(self.crops[i], factor)
            # a line read ahead of the stop at this width is taken, not read again
            got = {i: self._spare.pop(i)[1] for i in wanted if self._spare.get(i, (None,))[0] == self.factors[i]}
            fresh = [i for i in wanted if i not in got]
            crops = [self.crops[i] if self.factors[i] == 1.0 else squeeze_width(self.crops[i], self.factors[i])
                     for i in fresh]
            if fresh:
                got.update(zip(fresh, self._reader(crops)))
            for i in wanted:
                self._take(i, got[i])

    def _take(self, i: int, line) -> None:
        self.texts[i], self.scores[i], self.words[i] = line.text, line.score, line.info
        keep_letters(self.letters, line.torn)

    def _reading_order(self, indices: list[int]) -> list[int]:
        """Positions of the detector's lines ``indices`` in the order they are read: their
        reading order (``layout.line_reading_order``: down a column before the next), so that the
        lines the decode needs next come next; the detector's order where their boxes are not known."""
        if (not tuning.EARLY_LINES_READING_ORDER or self._boxes is None
                or any(not 0 <= i < len(self._boxes) for i in indices)):
            return list(range(len(indices)))
        quads = self._boxes[indices]
        return line_reading_order([(float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()),
                                    float(q[:, 1].max())) for q in quads])

    def _tell(self, lines: list[tuple[int, str]]) -> None:
        if not lines or self.tell is None:
            return
        try:
            self.tell(lines)
        except Exception:  # the reader of early lines went away: the regions still come
            self.tell = None


def chunks(count: int) -> list[list[int]]:
    """The positions ``0 .. count - 1`` in the chunks they are read and told in: the first
    ``tuning.EARLY_LINES_FIRST`` lines alone, each chunk after twice the one before, up to
    ``tuning.EARLY_LINES_CHUNK`` (the decode has nothing from its page until the first chunk is
    read). ``chunks(20)`` with 2 and 8: ``[0, 1]``, ``[2 .. 5]``, ``[6 .. 13]``, ``[14 .. 19]``."""
    out, first = [], 0
    size = max(1, min(tuning.EARLY_LINES_FIRST, tuning.EARLY_LINES_CHUNK))
    while first < count:
        out.append(list(range(first, min(count, first + size))))
        first += size
        size = min(2 * size, max(1, tuning.EARLY_LINES_CHUNK))
    return out


def page_quads(boxes: np.ndarray, record: dict) -> np.ndarray:
    """The detector's quadrilaterals (in its capped, padded input) in the page image's pixels:
    rapidocr's resizing and padding (``record``, as its ``op_record``) undone, the last first."""
    quads = np.array(boxes, dtype=float, copy=True)
    for op in reversed(list(record)):
        step = record[op]
        if "padding" in op:
            quads[..., 0] -= step.get("left", 0)
            quads[..., 1] -= step.get("top", 0)
        elif "preprocess" in op:
            quads[..., 0] *= step.get("ratio_w", 1.0)
            quads[..., 1] *= step.get("ratio_h", 1.0)
    return quads


def clipped_quad(quads: np.ndarray, index: int, height: int, width: int):
    """The four corners of line ``index`` kept inside a ``height`` x ``width`` image, or None where
    it is not known."""
    if quads is None or not 0 <= index < len(quads):
        return None
    q = quads[index].copy()
    q[:, 0] = q[:, 0].clip(0, width)
    q[:, 1] = q[:, 1].clip(0, height)
    return q
