"""A scan's direction from its ink alone: its characters and their lines in a grey render, no OCR.

The letters of a line stand closer to each other than to the lines above and below it: smeared a
little along the lines they join into words, smeared across them they stay apart, which says whether
the lines run across the page (a turn of 0 or 180) or along it (90 or 270). Turned so that its
lines run across, a line of Latin, Greek or Cyrillic script carries more ink above its x-height
band (capitals, ascenders, digits) than below it (descenders); the side that holds more, summed
over tiles small enough that a scan's skew does not blur a line into the next, says whether the
lines read upright or upside down. CJK characters fill their box evenly and leave that test
undecided, which is what it should say.

    ink_profile(gray)   InkReading: the axis the lines run along and which way up, each with its
                        evidence, from a grey image (numpy uint8, the page as displayed)

Costs a render and a few passes of OpenCV and numpy over it: a tenth of a second where OCR takes
seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import tuning


@dataclass
class InkReading:
    """What the ink says. ``across``: whether lines run across the page (``axis_share``: above 0.5
    where they do); ``pieces``: the characters it counted. ``ascent``: in the frame where the lines
    run across (the page turned a quarter clockwise where they run along it), (ink above the
    x-height band - ink below) / both, over every line found: above 0 the lines read upright in
    that frame, below 0 upside down; ``lines``: how many lines."""

    across: float
    pieces: int
    ascent: float
    lines: int

def ink_mask(gray: np.ndarray) -> np.ndarray:
    """Ink of a grey page: pixels darker than the page's own paper by a margin (Otsu's split between
    paper and print, never closer to the paper than ``tuning.INK_TURN_MIN_CONTRAST`` grey levels)."""
    hist = np.bincount(gray.ravel(), minlength=256).astype(np.float64)
    total = hist.sum()
    levels = np.arange(256)
    weight = np.cumsum(hist)
    mean = np.cumsum(hist * levels)
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean[-1] * weight - mean * total) ** 2 / (weight * (total - weight))
    split = int(np.nanargmax(np.nan_to_num(between[:-1], nan=0.0)))
    paper = int(np.percentile(gray, 90))
    return gray < min(split + 1, paper - tuning.INK_TURN_MIN_CONTRAST)  # the split's level is print


def _text_components(ink: np.ndarray) -> tuple[np.ndarray, float]:
    """``ink`` without specks (components under ``tuning.INK_TURN_MIN_SPECK_PX`` pixels: a scan's
    noise), as uint8, and the median longer side of what is left (a character's size, or a word's
    where the scan joined its letters)."""
    import cv2

    count, labels, stats, _ = cv2.connectedComponentsWithStats(ink.astype(np.uint8), connectivity=8)
    area = stats[:, cv2.CC_STAT_AREA]
    keep = area >= tuning.INK_TURN_MIN_SPECK_PX
    keep[0] = False
    if not keep[1:].any():
        return np.zeros(ink.shape, np.uint8), 0.0
    clean = keep[labels].astype(np.uint8)
    longer = np.maximum(stats[keep, cv2.CC_STAT_WIDTH], stats[keep, cv2.CC_STAT_HEIGHT])
    return clean, float(np.median(longer))


def axis_share(ink: np.ndarray) -> tuple[float, int]:
    """(share, pieces): how much more the page's characters join when smeared across the page than
    when smeared along it. Letters of a line stand closer to each other than to the lines above and
    below, so a short smear along the lines joins them into words and one across them joins little:
    ``share`` = pieces left by the smear along / both counts, above 0.5 where lines run across
    the page. ``pieces``: the characters counted (few: too little text to say)."""
    import cv2

    clean, size = _text_components(ink)
    if not size:
        return 0.5, 0
    reach = max(2, int(round(size * tuning.INK_TURN_SMEAR)))
    pieces = cv2.connectedComponents(clean)[0] - 1
    along_rows = cv2.connectedComponents(cv2.dilate(clean, np.ones((1, reach), np.uint8)))[0] - 1
    along_cols = cv2.connectedComponents(cv2.dilate(clean, np.ones((reach, 1), np.uint8)))[0] - 1
    both = along_rows + along_cols
    return (along_cols / both if both else 0.5), pieces


def _line_ascents(tile: np.ndarray) -> tuple[float, float, int]:
    """(ink above the x-height band, ink below, lines) of the lines of ``tile`` (lines run across):
    runs of rows with ink, not touching the tile's edge, of a plausible height."""
    rows = tile.sum(axis=1).astype(np.float64)
    if rows.max() <= 0:
        return 0.0, 0.0, 0
    inked = rows > tuning.INK_TURN_GAP_SHARE * rows.max()
    edges = np.flatnonzero(np.diff(np.concatenate(([0], inked.view(np.int8), [0]))))
    runs = [(a, b) for a, b in zip(edges[::2], edges[1::2]) if a > 0 and b < len(rows)]
    heights = [b - a for a, b in runs]
    if not heights:
        return 0.0, 0.0, 0
    usual = float(np.median(heights))
    above = below = 0.0
    count = 0
    for a, b in runs:
        if not (tuning.INK_TURN_MIN_LINE_PX <= b - a <= 2 * usual):
            continue
        line = rows[a:b]
        band = np.flatnonzero(line >= tuning.INK_TURN_BAND_SHARE * line.max())
        top, bottom = band[0], band[-1]
        above += float(line[:top].sum())
        below += float(line[bottom + 1:].sum())
        count += 1
    return above, below, count


def ink_profile(gray: np.ndarray) -> InkReading:
    """``InkReading`` of a grey page image (``gray``: 2-D uint8, rendered at ``tuning.INK_TURN_DPI``)."""
    ink = ink_mask(gray)
    across, pieces = axis_share(ink)
    sideways = across < 0.5
    frame = np.rot90(ink, k=-1) if sideways else ink  # turned a quarter clockwise: lines run across
    size = tuning.INK_TURN_TILE_PX
    height, width = frame.shape
    above = below = 0.0
    lines = 0
    for y in range(0, height - size // 2, size):
        for x in range(0, width - size // 2, size):
            tile = frame[y:y + size, x:x + size]
            if tuning.INK_TURN_TILE_MIN_INK <= float(tile.mean()) <= tuning.INK_TURN_TILE_MAX_INK:
                a, b, n = _line_ascents(tile)  # paper, a photograph or a filled box left out
                above, below, lines = above + a, below + b, lines + n
    ascent = (above - below) / (above + below) if above + below else 0.0
    return InkReading(across=across, pieces=pieces, ascent=ascent, lines=lines)
