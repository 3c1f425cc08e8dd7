"""The engine-cost benchmark runs end to end on a shallow thin model (uncompiled: the compile is
what ``tests/core/targets/test_fast_engine.py`` tests) and prints every row it promises."""

from __future__ import annotations

from tools.bench.engine_cost import (beside_own_attention, interleaved_times, main, quartiles, sweep_bytes,
                                     thin_target)


def test_the_thin_model_has_the_asked_depth_and_a_small_head(tmp_path):
    target = thin_target("hunyuan_vl", layers=3, folder=str(tmp_path))
    text = target.model.config.get_text_config()
    assert text.num_hidden_layers == len(target.model.model.language_model.layers) == 3
    assert target.vocab_size == 4096


def test_every_width_and_cached_length_is_measured_and_a_page_compiles_no_new_shape(capsys):
    assert main(["--no-compile", "--layers", "2", "--repeats", "1", "--tokens", "1,16,64",
                 "--cached", "40,90", "--page-tokens", "150"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(t, c) for c in (40, 90) for t in (1, 16, 64)]
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows)
    assert "growth 40 -> 90 cached at 64 tokens" in out and "the rounds' middle half" in out
    cold = next(line for line in out.splitlines() if "caches cleared first" in line)
    assert all(f"ms at {t} tokens" in cold for t in (1, 16, 64))
    own = out.split("fast beside its own attention kernels")[1]
    assert all(f"  at {t} tokens: " in own and "from 40 to 90 cached" in own for t in (1, 16, 64))
    assert "a page of 150 tokens" in out and "0 graphs compiled during it" in out


def test_each_round_times_every_run_once_one_after_the_other():
    order = []
    runs = {name: ((lambda: None), (lambda name=name: order.append(name))) for name in ("fast", "attention")}

    class Ticks:  # one tick a timed call: a round's pair is timed back to back
        @staticmethod
        def now():
            return len(order)

    times = interleaved_times(runs, 3, Ticks())
    assert order == ["fast", "attention"] * 4  # a first call each, then three rounds
    assert times == {"fast": [1, 1, 1], "attention": [1, 1, 1]}


def test_the_sweep_reads_what_the_attention_at_the_most_cached_tokens_reads(tmp_path):
    target = thin_target("hunyuan_vl", layers=3, folder=str(tmp_path))
    text = target.model.config.get_text_config()
    keys_and_values = 2 * 3 * text.num_key_value_heads * text.head_dim * (8000 + 64) * 4
    assert sweep_bytes(target, 64, 8000) == keys_and_values + 64 * (8000 + 64) * 4  # and the fp32 mask


def test_the_spread_of_the_rounds_is_their_middle_half():
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)
    assert quartiles([7.0]) == (7.0, 7.0)



def test_the_attention_taken_off_a_pass_is_the_kernel_the_pass_calls(tmp_path):
    """The profiler names the pass's attention calls as ``ATTENTION_KERNELS`` says: what
    ``beside_own_attention`` takes off a pass is there to take (a renamed kernel would leave the
    whole pass, and the growth read off it would be the attention's)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from core.targets.fast_pass import FastPasses
    from tools.bench.engine_cost import ATTENTION_KERNELS, fast_pass

    target = thin_target("hunyuan_vl", layers=2, folder=str(tmp_path))
    fast = FastPasses(target, 400, (1, 16), compiled=False)
    fast.warm_up()
    setup, timed = fast_pass(fast, 16, 200)
    with torch.no_grad():
        setup()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            timed()
        own = beside_own_attention(fast, [16], [30, 200], repeats=2)
    calls = sum(e.count for e in prof.key_averages() if any(k in e.key for k in ATTENTION_KERNELS))
    assert calls >= 2  # one a layer at least
    assert set(own) == {(16, 30), (16, 200)} and all(len(rounds) == 2 for rounds in own.values())
    assert all(ms > 0 for rounds in own.values() for ms in rounds)
