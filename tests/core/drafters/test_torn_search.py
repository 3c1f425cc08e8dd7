"""The second readings search only the columns whose runner-up can reach the threshold."""

from __future__ import annotations

import numpy as np

from core import tuning
from core.drafters.second_readings import torn_letters

CHARS = ["blank"] + list("BVondeAEIOU ")


def _softmax_lines(seed: int, lines: int = 6, columns: int = 40) -> np.ndarray:
    """Softmax columns of random logits, some peaked (one class near 1), some torn between two."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, (lines, columns, len(CHARS))).astype(np.float32)
    peak = rng.integers(0, len(CHARS), (lines, columns))
    height = rng.choice([2.0, 4.0, 6.0, 12.0], (lines, columns)).astype(np.float32)
    np.put_along_axis(logits, peak[:, :, None], np.take_along_axis(logits, peak[:, :, None], 2) + height[:, :, None], 2)
    exp = np.exp(logits - logits.max(axis=2, keepdims=True))
    return (exp / exp.sum(axis=2, keepdims=True)).astype(np.float32)


def _texts(preds: np.ndarray) -> list[str]:
    best = preds.argmax(axis=2)
    out = []
    for row in best:
        keep = [c for k, c in enumerate(row) if c != 0 and (k == 0 or c != row[k - 1])]
        out.append("".join(CHARS[c] for c in keep))
    return out


def test_searching_only_columns_that_can_be_torn_finds_the_same_letters():
    found = 0
    for seed in range(20):
        preds = _softmax_lines(seed)
        best = preds.argmax(axis=2)
        best_prob = np.take_along_axis(preds, best[:, :, None], axis=2)[:, :, 0]
        texts = _texts(preds)
        every = torn_letters(preds, texts, CHARS, best)
        assert torn_letters(preds, texts, CHARS, best, best_prob) == every
        found += sum(len(line) for line in every)
    assert found > 20  # the lines were torn on letters, not only sure of them


def test_a_column_whose_best_class_leaves_too_little_is_not_searched():
    # "Bo": B sure (0.99), o torn with V at 0.3. B's column also claims V at 0.5, which a softmax
    # column cannot (its classes sum to one): given the best probabilities, it is never looked at.
    preds = np.full((1, 4, len(CHARS)), 0.0, dtype=np.float32)
    preds[0, 0, CHARS.index("B")], preds[0, 0, CHARS.index("V")] = 0.99, 0.5
    preds[0, 1, 0] = 1.0
    preds[0, 2, CHARS.index("o")], preds[0, 2, CHARS.index("V")] = 0.7, 0.3
    preds[0, 3, 0] = 1.0
    best = preds.argmax(axis=2)
    best_prob = np.take_along_axis(preds, best[:, :, None], axis=2)[:, :, 0]
    assert 1.0 - 0.99 < tuning.OCR_SECOND_READING
    assert torn_letters(preds, ["Bo"], CHARS, best) == [[("Bo", 0, "V", 0.5), ("Bo", 1, "V", np.float32(0.3))]]
    assert torn_letters(preds, ["Bo"], CHARS, best, best_prob) == [[("Bo", 1, "V", np.float32(0.3))]]
