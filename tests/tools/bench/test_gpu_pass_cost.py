"""The pass-cost probe behind ``tools/bench/gpu_replay_cost.sh``, on CPU with the tiny model: the
script's own logic (timing, cache kept at the page's length, the fitted constants) without a GPU."""

import pytest

from tools.bench.gpu_pass_cost import fit_line, measure, page_image


def test_fit_line_recovers_a_fixed_and_a_per_token_part():
    widths = [1, 16, 64, 256]
    seconds = [(20.0 + 0.01 * w) / 1000 for w in widths]
    a, b = fit_line(widths, seconds)
    assert a == pytest.approx(20.0) and b == pytest.approx(0.01)
    assert fit_line([16], [0.02]) == (pytest.approx(20.0), 0.0)  # one width: its cost is the fixed part
    assert fit_line([1, 64], [0.03, 0.02])[1] == 0.0  # never cheaper with more tokens


@pytest.mark.parametrize("widths", [(1, 8), (1, 16, 64)])
def test_measure_times_each_width_on_the_prefilled_page(tiny_target_dir, widths):
    from core.targets.loader import load_target

    target = load_target(str(tiny_target_dir("hunyuan_vl")), device="cpu")
    report = measure(target, widths=widths, repeats=2, warmup=1, image=page_image(612, 792))
    assert report.widths == list(widths) and all(s > 0 for s in report.seconds)
    assert all(len(v) == 2 for v in report.samples.values())
    assert report.pass_ms >= 0 and report.token_ms >= 0 and report.prefill_seconds > 0
    assert report.prefill_tokens > 1000  # a letter page at 72 dpi: over a thousand 16-pixel patches
    table = report.table()
    assert f"| {widths[-1]} |" in table and report.flags() in table
    assert report.flags().startswith("--gpu-pass-ms ") and "--gpu-token-ms " in report.flags()


def test_the_command_prints_the_constants(tiny_target_dir, capsys):
    from tools.bench.gpu_pass_cost import main

    assert main(["--model", str(tiny_target_dir("hunyuan_vl")), "--device", "cpu", "--dtype", "fp32",
                 "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "| 256 |" in out and "cost model constants: --gpu-pass-ms" in out
