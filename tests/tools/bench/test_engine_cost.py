"""The engine-cost benchmark runs end to end on a shallow thin model (uncompiled: the compile is
what ``tests/core/targets/test_fast_engine.py`` tests) and prints every row it promises."""

from __future__ import annotations

from tools.bench.engine_cost import interleaved_times, main, quartiles, sweep_bytes, thin_target


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
