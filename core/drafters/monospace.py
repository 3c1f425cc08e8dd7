"""Find code listings on scans: OCR knows no fonts, but it knows where each character sits.

In a monospaced font every character, a space included, takes the same width, so the centres of a
line's characters lie on a straight line against their index in the text: ``x_i = x_0 + i * pitch``.
In a proportional font an ``i`` is a third of an ``m`` and the centres drift off any straight line.
RapidOCR gives each recognised character's position (from the CTC time step that emitted it), so
``pitch_fit`` tests each long line on its own; ``mark_monospace`` then spreads the verdict to the
short lines of the same listing (table cells such as ``42``, too short to test) and joins pieces of
one listing row that OCR detected apart (``item`` and ``qty`` of ``item      qty``).

Lines marked ``mono`` become fenced ``code`` regions in ``core.drafters.regions``, one source line per
line, instead of prose that runs a listing's lines together.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from core import tuning
from core.drafters.layout import TextLine, rows_of, union_box


@dataclass(frozen=True)
class PitchFit:
    """How well a line's character centres fit a fixed pitch: ``straight``, the rms distance from one
    line ``x0 + index * pitch``; ``per_word``, from a line with its own ``x0`` per word. Both in pitches."""

    pitch: float
    straight: float
    per_word: float


def pitch_fit(text: str, centres: list[tuple[str, float]]) -> PitchFit | None:
    """Fit ``x = x0 + index * pitch`` to the recognised characters of one line.

    ``centres``: ``(character, x centre)`` in reading order, as OCR emitted them; OCR emits no spaces,
    so each character is matched to its index in ``text`` by scanning forward. None when fewer than
    8 characters could be placed, or the line is mostly not Latin (CJK text is monospaced by nature).

    Example: ``text = "ab = 12"`` with centres a 10, b 20, = 40, 1 60, 2 70 places the characters at
    indices 0, 1, 3, 5, 6: the fit is exact with pitch 10, ``straight`` = ``per_word`` = 0 (None in
    practice: five characters are too few to decide).
    """
    if sum(ord(c) > 0x24F for c in text) > 0.2 * len(text):
        return None
    index, xs = [], []
    j = 0
    for char, x in centres:
        while j < len(text) and text[j] != char:
            j += 1
        if j >= len(text):
            break
        index.append(j)
        xs.append(x)
        j += 1
    if len(index) < 8:
        return None
    x = np.asarray(xs)
    straight = np.stack([np.asarray(index, dtype=float), np.ones(len(index))], axis=1)  # (n, 2)
    pitch, rms = _least_squares(straight, x)
    if pitch <= 0:
        return None
    word_of = np.cumsum([c == " " for c in text])[index]  # (n,) word number of each character
    words = np.unique(word_of)
    per_word = np.concatenate([straight[:, :1], (word_of[:, None] == words[None, :]).astype(float)], axis=1)
    if len(index) - per_word.shape[1] < 4:  # too few characters left over to judge words
        word_rms = rms
    else:
        _, word_rms = _least_squares(per_word, x)
    return PitchFit(pitch, rms / pitch, word_rms / pitch)


def _least_squares(design: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """(slope of the first column, rms residual) of ``x ~ design @ coef``."""
    coef, *_ = np.linalg.lstsq(design, x, rcond=None)
    return float(coef[0]), float(np.sqrt(np.mean((design @ coef - x) ** 2)))


def mark_monospace(lines: list[TextLine], fits: list[PitchFit | None]) -> list[TextLine]:
    """Mark the lines of code listings ``mono`` and join each listing row's pieces into one line.

    ``fits[i]`` is ``pitch_fit`` of ``lines[i]`` (pitch in the lines' units). A long line whose
    centres lie on one straight line is monospaced; a short or untested line joins a listing when
    it sits directly against a monospaced line within the listing's width and is not clearly
    proportional itself. A monospaced line inside a paragraph (flush against prose) is inline code,
    not a listing. Lines that are not monospaced come back unchanged.
    """
    mono: dict[int, float] = {}  # line index -> pitch
    prose: set[int] = set()
    for i, (line, fit) in enumerate(zip(lines, fits)):
        if fit is None or len(line.text) < tuning.MIN_TESTED_CHARS:
            continue
        if fit.straight <= tuning.MAX_STRAIGHT_RMS:
            mono[i] = fit.pitch
        elif fit.per_word >= tuning.MIN_PROSE_WORD_RMS:
            prose.add(i)
    in_paragraph = {i for i, line in enumerate(lines) if any(_flush(line, lines[p]) for p in prose)}
    # A monospaced line flush under or over a prose line is inline code filling a paragraph's line
    # (a list of type names); listings are set off from the text around them.
    for i in in_paragraph & mono.keys():
        del mono[i]
    if not mono:
        return lines
    # A short line flush under or over a prose line ends or starts that paragraph ("... Here's an"
    # / "example:") and only joins a listing that it also touches.
    changed = True
    while changed:
        changed = False
        for i, line in enumerate(lines):
            if i in mono or i in prose:
                continue
            for j, pitch in list(mono.items()):
                if _joins_listing(line, lines[j], pitch) and (i not in in_paragraph or _flush(line, lines[j])):
                    mono[i] = pitch
                    changed = True
                    break
    others = [ln for i, ln in enumerate(lines) if i not in mono]
    return others + _join_rows([(lines[i], mono[i]) for i in sorted(mono)])


def _flush(a: TextLine, b: TextLine) -> bool:
    """True if ``a`` and ``b`` are consecutive lines of one block: stacked with line spacing only,
    overlapping horizontally."""
    h = max(min(a.height, b.height), 1.0)
    gap = max(a.bbox[1] - b.bbox[3], b.bbox[1] - a.bbox[3])
    return -0.5 * h <= gap <= 0.4 * h and min(a.bbox[2], b.bbox[2]) > max(a.bbox[0], b.bbox[0])


def _joins_listing(line: TextLine, code: TextLine, pitch: float) -> bool:
    """True if ``line`` can be part of the listing that holds ``code`` (set at ``pitch``)."""
    h = max(min(line.height, code.height), 1.0)
    gap = max(line.bbox[1] - code.bbox[3], code.bbox[1] - line.bbox[3])
    same_row = min(line.bbox[3], code.bbox[3]) - max(line.bbox[1], code.bbox[1]) >= 0.5 * h
    # Listing lines stand flush (line spacing only); a paragraph before or after a listing is set
    # off. A short line on the listing's left edge may sit one line away: a rule of dashes or box
    # drawing between rows, which OCR does not read, leaves that gap.
    aligned = abs(line.bbox[0] - code.bbox[0]) <= 2.5 * pitch and len(line.text) < tuning.MIN_TESTED_CHARS
    if not same_row and gap > (1.6 if aligned else 0.4) * h:
        return False
    if line.bbox[2] < code.bbox[0] - 2 * h or line.bbox[0] > code.bbox[2] + (2 * h if not same_row else 12 * pitch):
        return False
    # A short piece of the listing is about as wide as its characters at the listing's pitch.
    width = line.bbox[2] - line.bbox[0]
    return 0.6 * len(line.text) * pitch <= width <= len(line.text) * pitch + 1.5 * h


def _join_rows(pieces: list[tuple[TextLine, float]]) -> list[TextLine]:
    """One line per listing row: pieces side by side are joined with spaces up to the column each
    starts at (at least one)."""
    pitch_of = {id(line): pitch for line, pitch in pieces}
    joined = []
    for row in rows_of([line for line, _ in pieces]):
        row = [(line, pitch_of[id(line)]) for line in sorted(row, key=lambda ln: ln.bbox[0])]
        pitch = float(np.median([p for _, p in row]))
        first = row[0][0]
        text = first.text.rstrip()
        for piece, _ in row[1:]:  # each piece starts at its own column (boxes share their padding)
            column = round((piece.bbox[0] - first.bbox[0]) / pitch)
            text += " " * max(1, column - len(text)) + piece.text.strip()
        joined.append(dataclasses.replace(
            first, bbox=union_box(p.bbox for p, _ in row), text=text, mono=True,
            size=max(p.size for p, _ in row), score=min(p.score for p, _ in row)))
    return joined
