"""RapidOCR's per-character boxes, the same numbers in array operations.

``ocr_lines`` needs where each character of a line sits (RapidOCR's ``return_single_char_box``):
monospaced listings are told from prose by it, and the column gutters and the lines' ink come
from it. RapidOCR computes the boxes after the whole page is read, a few Python statements and a
small matrix product per corner of every character (``rapidocr.cal_rec_boxes.CalRecBoxes``):
4-5 % of a scan's drafting on two cores, all of it between the last line read and the page's
regions, which the decode waits for.

``page_char_boxes`` computes, for each line, what RapidOCR's steps compute:

1. a character's centre at its CTC column's middle (``(column + 0.5)`` times the line's width over
   the columns), its width the mean spacing of the columns inside a word (the line's width over
   its characters where no word has two), edges truncated to whole pixels and kept in the crop;
2. neighbours that overlap split the overlap between them;
3. the corners taken from the crop back to the page by the inverse of the perspective transform
   that cut the crop out, truncated to whole pixels.

RapidOCR then reorders each box's corners (``order_points``): the same points in another order
where two stand left of the box's centre and two right, each pair at two heights; other boxes
(where it may drop or repeat a corner) are handed to its ordering. A corner that lands on a whole
pixel is computed again as RapidOCR computes it (the last bit of a product decides which side it
truncates to). Vertical lines (taller than 1.5 times their width) and lines without CTC columns
are handed to RapidOCR's whole calculation. ``tests/core/drafters/test_char_boxes.py`` checks the
boxes against RapidOCR's on a page read for real.
"""

from __future__ import annotations

import numpy as np


def page_char_boxes(shapes: list[tuple[int, int]], boxes, texts: list[str], infos: list) -> list[list]:
    """Each line's ``[(character, confidence, corners)]`` in the page (rapidocr's
    ``CalRecBoxes`` with ``return_single_char_box``, then its ``calc_word_boxes``' filter), from
    the line's crop size ``(height, width)`` in the page's pixels, its detected quadrilateral in
    them, its text and the decoder's ``WordInfo``."""
    from rapidocr.cal_rec_boxes import CalRecBoxes

    rapidocr_boxes = CalRecBoxes()
    out = []
    for (height, width), box, text, info in zip(shapes, boxes, texts, infos):
        if height * width == 0:
            out.append([])
            continue
        line = _line_boxes(width, height, np.asarray(box, dtype=np.float32), text, info, rapidocr_boxes)
        if line is None:
            line = _rapidocr_line(rapidocr_boxes, (height, width), box, text, info)
        out.append([(char, conf, corners) for char, conf, corners in line if corners is not None])
    return out


def _line_boxes(width: int, height: int, box: np.ndarray, text: str, info, inner):
    """One line's ``[(character, confidence, corners)]`` as RapidOCR computes them; None where
    RapidOCR's own calculation must do it (a vertical line, no columns)."""
    if not text or not getattr(info, "line_txt_len", 0):
        return []
    if _vertical(box, inner):
        return None
    words, word_cols = info.words, info.word_cols
    chars = [c for word in words for c in word]
    cols = np.array([c for word_col in word_cols for c in word_col], dtype=float)
    if len(chars) != len(cols) or not len(cols):
        return None
    col_width = width / info.line_txt_len
    spacings = [(wc[-1] - wc[0]) * col_width / (len(wc) - 1) for wc in word_cols if len(wc) > 1]
    char_width = sum(spacings) / len(spacings) if spacings else width / len(text)
    centre = (cols + 0.5) * col_width
    x0 = np.maximum(np.trunc(centre - char_width / 2), 0)
    x1 = np.minimum(np.trunc(centre + char_width / 2), width)
    order = np.argsort(x0, kind="stable")  # RapidOCR sorts the cells by their left edge
    x0, x1 = x0[order], x1[order]
    overlap = np.where(x1[:-1] > x0[1:], x1[:-1] - x0[1:], 0.0)
    x1[:-1] -= overlap / 2
    x0[1:] += overlap - overlap / 2
    corners = _to_page(box, x0, x1, float(height))[:len(info.confs)]  # paired as RapidOCR's ``zip`` pairs
    xs, ys = corners[..., 0], corners[..., 1]
    centre_x = xs.mean(axis=1, keepdims=True)
    left_side = xs < centre_x
    # RapidOCR's ordering keeps a box's corners (in its own order) when two lie left of its centre
    # and two right, each pair at two heights; otherwise it may drop or repeat one: it decides.
    left_ys = np.sort(np.where(left_side, ys, np.inf), axis=1)[:, :2]
    right_ys = np.sort(np.where(left_side, -np.inf, ys), axis=1)[:, 2:]
    plain = ((left_side.sum(axis=1) == 2) & (xs != centre_x).all(axis=1)
             & (left_ys[:, 0] != left_ys[:, 1]) & (right_ys[:, 0] != right_ys[:, 1]))
    points = corners.tolist()
    for k in np.flatnonzero(~plain):
        points[k] = inner.order_points(points[k])
    return list(zip(chars, info.confs, points))


def _vertical(box: np.ndarray, inner) -> bool:
    """Whether RapidOCR reads ``box`` as a vertical line (its ``get_box_direction``); True where
    this rapidocr cannot say, so that its own calculation does the line."""
    direction = getattr(inner, "get_box_direction", None)
    return direction is None or direction(box).name != "HORIZONTAL"


def _to_page(box: np.ndarray, x0: np.ndarray, x1: np.ndarray, height: float) -> np.ndarray:
    """The cells ``[x0, x1] x [0, height]`` of a crop cut from ``box`` (four corners in the page,
    clockwise from the top left) back in the page: (cells, 4, 2) whole pixels, corners in the
    order top left, top right, bottom right, bottom left (RapidOCR's ``reverse_rotate_crop_image``)."""
    import cv2

    left, top = int(np.min(box[:, 0])), int(np.min(box[:, 1]))
    local = box.copy()
    local[:, 0] -= left
    local[:, 1] -= top
    crop_w = int(np.linalg.norm(local[0] - local[1]))
    crop_h = int(np.linalg.norm(local[0] - local[3]))
    std = np.array([[0, 0], [crop_w, 0], [crop_w, crop_h], [0, crop_h]], dtype=np.float32)
    _, inverse = cv2.invert(cv2.getPerspectiveTransform(local, std))
    points = np.empty((len(x0), 4, 3))
    points[:, :, 0] = np.stack([x0, x1, x1, x0], axis=1)
    points[:, :, 1] = (0.0, 0.0, height, height)
    points[:, :, 2] = 1.0
    homogeneous = points @ inverse.T  # (cells, 4, 3) in the page
    page = homogeneous[..., :2] / homogeneous[..., 2:3]
    page[..., 0] += left
    page[..., 1] += top
    # A corner that lands on a whole pixel (a crop's edge maps back to the detector's integer
    # corner) truncates to either side of it by the last bit of the product: those corners are
    # computed again as RapidOCR computes them, one matrix-vector product each.
    for k, j in zip(*np.nonzero((np.abs(page - np.round(page)) < 1e-6).any(axis=2))):
        x, y, z = np.dot(inverse, points[k, j])
        page[k, j] = (x / z + left, y / z + top)
    return np.trunc(page).astype(int)


def _rapidocr_line(rapidocr_boxes, shape: tuple[int, int], box, text: str, info):
    """rapidocr's own boxes for one line (it reads only the crop's size)."""
    from rapidocr.ch_ppocr_rec import TextRecOutput

    crop = np.broadcast_to(np.uint8(0), (*shape, 1))
    one = TextRecOutput(txts=(text,), word_results=(info,))
    return rapidocr_boxes([crop], [box], one, True).word_results[0]
