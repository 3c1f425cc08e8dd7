import random

import pytest

from core.speculative.stopping import RepetitionGuard, StopRule


def _ar_stop(tokens, rule):
    """Reference: check after every single token, as plain decoding would."""
    for n in range(1, len(tokens) + 1):
        cut = rule.cut(tokens[:n], n - 1)
        if cut:
            return cut
    return None


def test_batched_cut_equals_token_by_token():
    rng = random.Random(0)
    rule = StopRule(frozenset({99}), max_new_tokens=900, repetition=RepetitionGuard(8, 40))
    for trial in range(30):
        prefix = [rng.randrange(50) for _ in range(rng.randrange(0, 80))]
        block = [rng.randrange(50) for _ in range(rng.randrange(1, 8))]
        loop = block * rng.randrange(0, 12)
        tail = [rng.randrange(50) for _ in range(30)]
        if trial % 5 == 0:
            tail.insert(rng.randrange(30), 99)
        tokens = prefix + loop + tail
        expected = _ar_stop(tokens, rule)
        # the same tokens arriving in random chunks
        got, pos = None, 0
        while pos < len(tokens) and got is None:
            step = rng.randrange(1, 20)
            got = rule.cut(tokens[: pos + step], pos)
            pos += step
        assert got == expected, (trial, got, expected)


def test_repetition_detected_and_plain_text_passes():
    guard = RepetitionGuard(max_period=16, min_run=64)
    loop = [1, 2, 3] * 40
    assert guard.first_trigger(loop, 0) == 64 + 3
    text = list(range(500))
    assert guard.first_trigger(text, 0) is None


def test_max_new_tokens():
    rule = StopRule(frozenset(), max_new_tokens=10)
    assert rule.cut(list(range(12)), 5) == (10, "max_new_tokens")


def _first_trigger_one_period_at_a_time(guard, tokens, new_from):
    """The guard's rule written plainly, one period after another (the reference)."""
    start = max(0, new_from - guard.min_run - guard.max_period)
    a = tokens[start:]
    best = None
    for p in range(1, min(guard.max_period, len(a) - 1) + 1):
        run = 0
        for i in range(len(a)):
            run = run + 1 if i >= p and a[i] == a[i - p] else 0
            if run == guard.min_run:
                length = start + i + 1
                if length > new_from and (best is None or length < best):
                    best = length
                break
    return best if len(tokens) >= guard.min_run + 1 else None


@pytest.mark.parametrize("vocabulary", [50, 6])  # 6: fewer distinct tokens than periods, as a table's
def test_repetition_guard_matches_the_plain_rule_on_random_loops(vocabulary):
    rng = random.Random(7)
    guard = RepetitionGuard(max_period=12, min_run=40)
    for _ in range(300):
        prefix = [rng.randrange(vocabulary) for _ in range(rng.randrange(0, 60))]
        period = [rng.randrange(vocabulary) for _ in range(rng.randrange(1, 16))]
        loop = (period * 100)[:rng.randrange(0, 90)]
        tail = [rng.randrange(vocabulary) for _ in range(rng.randrange(0, 20))]
        tokens = prefix + loop + tail
        for new_from in {0, len(tokens) // 2, max(0, len(tokens) - 5)}:
            assert guard.first_trigger(tokens, new_from) == _first_trigger_one_period_at_a_time(
                guard, tokens, new_from), (tokens, new_from)
