import time

import pytest

from core.speculative.budget import AcceptanceRate, PassCost, affordable_rows, best_length
from core.speculative.decode import SpeculativeDecoder


def test_pass_cost_recovers_fixed_and_per_token_cost():
    cost = PassCost()
    for tokens in (1, 9, 33, 65, 17, 129, 5, 48) * 4:
        cost.add(tokens, 0.005 + 0.0001 * tokens)
    assert cost.a == pytest.approx(0.005, rel=1e-6)
    assert cost.b == pytest.approx(0.0001, rel=1e-6)
    assert cost.token_share == pytest.approx(0.02, rel=1e-6)


def test_pass_cost_assumes_free_width_until_widths_differ():
    cost = PassCost()
    for _ in range(10):
        cost.add(1, 0.005)
    assert cost.b == 0.0 and cost.token_share == 0.0
    assert cost.a == pytest.approx(0.005)
    assert not cost.slope_measured  # the engine admits no Stage 1 rows on this price yet
    cost.add(9, 0.013)
    assert cost.slope_measured and cost.b == pytest.approx(0.001)


def test_pass_cost_follows_a_machine_that_slows_down():
    cost = PassCost(forget=0.9)
    for tokens in (1, 64) * 20:
        cost.add(tokens, 0.005 + 0.0001 * tokens)
    for tokens in (1, 64) * 40:
        cost.add(tokens, 0.005 + 0.0004 * tokens)
    assert cost.b == pytest.approx(0.0004, rel=0.05)


def test_best_length_matches_the_worked_example():
    # a = 5 ms, b = 0.1 ms: token_share 0.02
    assert best_length(0.40, 0.02, rows=1, longest=256) == 3
    assert best_length(0.98, 0.02, rows=1, longest=256) == 64
    assert best_length(0.40, 0.0, rows=1, longest=256) == 256  # width is free (a GPU)


def test_best_length_shrinks_with_rows_and_never_passes_longest():
    alone = best_length(0.9, 0.02, rows=1, longest=256)
    assert best_length(0.9, 0.02, rows=16, longest=256) < alone
    assert best_length(0.999, 0.0001, rows=1, longest=24) <= 24
    assert best_length(0.0, 10.0, rows=16, longest=256) == 1  # at least one draft token: still learns


def test_acceptance_rate_follows_recent_passes():
    rate = AcceptanceRate()
    assert rate.alpha == pytest.approx(0.5)
    for _ in range(20):
        rate.add(accepted=0, rejected=True)
    assert rate.alpha < 0.05
    for _ in range(5):
        rate.add(accepted=30, rejected=False)
    assert rate.alpha > 0.9


def test_affordable_rows():
    assert affordable_rows(0.0, 65, 16) == 16
    assert affordable_rows(0.02, 9, 16) == 5      # 5 rows x 9 tokens x 0.02 <= one fixed cost
    assert affordable_rows(0.02, 65, 16) == 0
    assert affordable_rows(1e-6, 1, 16) == 16


class _Target:
    clock = staticmethod(time.perf_counter)

    def __init__(self, timed: bool):
        self.measures_pass_cost = timed


def test_a_target_that_stands_for_a_gpu_is_not_timed():
    assert SpeculativeDecoder(_Target(False), cost=PassCost()).cost is None
    assert SpeculativeDecoder(_Target(True), cost=PassCost()).cost is not None


def test_stage1_pays_for_long_regions_and_sooner_for_ocr():
    from core.speculative.budget import stage1_pays

    # a CPU: a crop prefill costs 25 ms, a pass 7 ms
    assert not stage1_pays(40, exact_text=True, prefill_seconds=0.025, pass_seconds=0.007)
    assert stage1_pays(120, exact_text=True, prefill_seconds=0.025, pass_seconds=0.007)
    assert stage1_pays(40, exact_text=False, prefill_seconds=0.025, pass_seconds=0.007)
    # a GPU: sixteen crops prefill together in about two passes' time, 2.5 ms a crop
    assert stage1_pays(20, exact_text=True, prefill_seconds=0.0025, pass_seconds=0.02)


def test_stage1_counts_the_region_rows_tokens_where_tokens_cost():
    from core.speculative.budget import stage1_pays

    # the tiny model on a CPU: 7 ms a pass plus 0.1 ms a token; a crop 25 ms
    tiny = dict(prefill_seconds=0.025, pass_seconds=0.007, token_seconds=1e-4)
    assert not stage1_pays(5000, exact_text=True, **tiny)  # 0.28 ms saved a token, 0.8 ms spent
    assert not stage1_pays(77, exact_text=False, **tiny) and stage1_pays(79, exact_text=False, **tiny)
    assert stage1_pays(None, exact_text=False, **tiny)  # no draft: a token of its reading pays
    # a real-width model on a CPU: 50 ms a pass plus 4 ms a token; a crop 0.7 s: no region pays,
    # and no region without a draft either
    real = dict(prefill_seconds=0.7, pass_seconds=0.05, token_seconds=0.004)
    assert not stage1_pays(5000, exact_text=True, **real)
    assert not stage1_pays(5000, exact_text=False, **real)
    assert not stage1_pays(None, exact_text=False, **real)
    # ... and as fitted there (78 ms, 2.8 ms: a concave cost read as a line) ...
    assert not stage1_pays(None, exact_text=False, prefill_seconds=0.7, pass_seconds=0.078, token_seconds=0.0028)
    # ... until a token costs less: 0.5 ms
    assert stage1_pays(300, exact_text=False, prefill_seconds=0.7, pass_seconds=0.05, token_seconds=0.0005)
    assert stage1_pays(None, exact_text=True, prefill_seconds=0.7, pass_seconds=0.05, token_seconds=0.0005)
    # a GPU: width is free, every region without a draft is read
    assert stage1_pays(None, exact_text=False, prefill_seconds=0.0, pass_seconds=0.02)


def test_pass_cost_keeps_the_crop_cost_and_the_latest_width():
    cost = PassCost()
    assert cost.crop_seconds is None and cost.width == 1
    cost.add_crops(4, 0.1)
    assert cost.crop_seconds == pytest.approx(0.025)
    cost.add_crops(1, 0.025 + 0.1)
    assert cost.crop_seconds == pytest.approx(0.7 * 0.025 + 0.3 * 0.125)
