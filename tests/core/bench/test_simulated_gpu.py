"""The simulated GPU (``core.bench.simulated_gpu``): replay's acceptance on a cost model's clock."""

import threading
import time

import pytest
import torch
from PIL import Image

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.bench.simulated_gpu import GpuCostModel, SimulatedGpuTarget, _Device, prefill_tokens
from core.engine import Engine, EngineConfig

from tests.core.bench.test_replay import REF, REGION_REFS, REGIONS


def test_the_cost_model_is_a_fixed_part_and_a_part_per_token():
    cost = GpuCostModel(pass_ms=20.0, token_ms=0.01)
    assert cost.seconds(0) == pytest.approx(0.020) and cost.seconds(100) == pytest.approx(0.021)
    assert GpuCostModel(0, 0).free and not cost.free
    assert "20 ms a pass + 0.01 ms a token" in cost.describe()


def test_a_prefill_counts_its_images_patches_within_the_processors_bounds():
    assert prefill_tokens(Image.new("RGB", (1024, 1024))) == 4096 + 64  # 16 x 16 pixels a patch
    assert prefill_tokens(Image.new("RGB", (100, 100))) == 1024 + 64  # scaled up to 512 x 512
    assert prefill_tokens(Image.new("RGB", (4000, 4000))) == 16384 + 64  # down to 2048 x 2048


def test_an_overslept_pass_is_taken_off_the_next(monkeypatch):
    clock = {"now": 0.0}
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock["now"] += seconds + 0.004  # the scheduler wakes the thread 4 ms late

    monkeypatch.setattr(time, "sleep", sleep)
    monkeypatch.setattr(time, "perf_counter", lambda: clock["now"])
    device = _Device()
    for _ in range(3):
        device.spend(0.020)
    assert slept == [pytest.approx(0.020), pytest.approx(0.016), pytest.approx(0.016)]
    device.spend(0.003)  # shorter than what is owed: no sleep, the rest is owed on
    assert len(slept) == 3 and device._ahead == pytest.approx(0.001)
    assert device.seconds == pytest.approx(0.063)


def test_the_replays_own_work_is_part_of_the_passs_time(monkeypatch):
    """Finding the answer in the reference stands for the model's arithmetic: its wall is taken off
    the pass's sleep, not paid on top of it."""
    clock = {"now": 0.0}
    slept = []
    work = {"seconds": 0.003}

    def sleep(seconds):
        slept.append(seconds)
        clock["now"] += seconds

    def answer(self, tokens, *rest, **kwargs):
        clock["now"] += work["seconds"]
        return "ids"

    monkeypatch.setattr(time, "sleep", sleep)
    monkeypatch.setattr(time, "perf_counter", lambda: clock["now"])
    monkeypatch.setattr(ReplayTarget, "forward", answer)
    target = SimulatedGpuTarget(ReplayTokenizer(base_tokenizer("tiny")), GpuCostModel(pass_ms=5.0, token_ms=0.0))
    tokens = torch.zeros((1, 16), dtype=torch.long)
    assert target.forward(tokens, None, None, None) == "ids"
    assert slept == [pytest.approx(0.002)] and clock["now"] == pytest.approx(0.005)
    work["seconds"] = 0.008  # longer than the model's pass: no sleep, and nothing owed to the next
    target.forward(tokens, None, None, None)
    assert len(slept) == 1 and target.device_clock._ahead == 0.0
    assert target.device_seconds == pytest.approx(0.010)


def _convert(target, mode, **config):
    target.set_page(REF, REGION_REFS)
    engine = Engine(EngineConfig(mode=mode, max_new_tokens=2048, **config), target=target, drafter=None)
    return engine.convert_image(Image.new("RGB", (420, 595), "white"), REGIONS, 420, 595, 1)


@pytest.mark.parametrize("mode", ["ar", "page", "hsd"])
def test_a_free_simulated_gpu_decodes_as_replay_does(mode):
    tok = ReplayTokenizer(base_tokenizer("tiny"))
    free = SimulatedGpuTarget(tok, GpuCostModel(0.0, 0.0))
    assert not free.measures_pass_cost  # nothing to time: its pass counts are replay's
    simulated, replayed = _convert(free, mode), _convert(ReplayTarget(tok), mode)
    assert simulated.markdown == replayed.markdown == REF
    assert simulated.stats.forward_passes == replayed.stats.forward_passes
    assert free.device_seconds == 0.0


def test_every_pass_spends_the_models_time_without_the_decoding_threads_cpu():
    target = SimulatedGpuTarget(ReplayTokenizer(base_tokenizer("tiny")), GpuCostModel(pass_ms=4.0, token_ms=0.0))
    assert target.measures_pass_cost  # timed like a real model: proposal lengths follow its cost
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    res = _convert(target, "ar")
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    assert res.markdown == REF
    assert target.device_seconds == pytest.approx(0.004 * res.stats.forward_passes)  # prefill included
    assert wall >= 0.9 * target.device_seconds
    assert cpu < 0.5 * target.device_seconds  # slept, not spun


def test_a_thread_runs_while_a_pass_is_spent():
    """The simulated pass does not hold the GIL: a drafter thread progresses beside it."""
    target = SimulatedGpuTarget(ReplayTokenizer(base_tokenizer("tiny")), GpuCostModel(pass_ms=200.0))
    counted, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            counted[0] += 1

    worker = threading.Thread(target=count)
    worker.start()
    try:
        before = counted[0]
        target.device_clock.spend(0.2)
        during = counted[0] - before
    finally:
        stop.set()
        worker.join()
    assert during > 1000
