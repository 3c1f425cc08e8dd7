"""``core.tuning`` is the one place of every default and threshold: the commands' defaults are its
values, and docs/tuning.md names each of them."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from core import tuning
from core.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def tuning_assignments() -> list[tuple[list[str], int]]:
    """``(names, line)`` of each module-level assignment in ``core/tuning.py``, in order."""
    tree = ast.parse((ROOT / "core" / "tuning.py").read_text(encoding="utf-8"))
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                out.append(([e.id for e in elts if isinstance(e, ast.Name)], node.lineno))
    return out


def tuning_names() -> list[str]:
    return [name for names, _ in tuning_assignments() for name in names]


def test_every_value_is_documented_with_its_value():
    doc = (ROOT / "docs" / "tuning.md").read_text(encoding="utf-8")
    names = tuning_names()
    assert len(names) > 100 and len(set(names)) == len(names)
    missing = [name for name in names if f"`{name}`" not in doc]
    assert not missing, f"docs/tuning.md does not name {missing}"


def test_every_value_has_a_comment_saying_what_it_means():
    lines = (ROOT / "core" / "tuning.py").read_text(encoding="utf-8").splitlines()
    for names, line in tuning_assignments():
        assert lines[line - 2].startswith("#:"), f"no '#:' comment right above {names}"


def _defaults(argv: list[str]) -> dict:
    return vars(build_parser().parse_args(argv))


def test_convert_defaults_are_tuning_s():
    args = _defaults(["convert", "in.pdf", "-o", "out.md"])
    assert {k: args[k] for k in ("mode", "tau", "drafter", "scan_layout", "dpi", "max_new_tokens",
                                 "background_drafting", "model", "device")} == {
        "mode": tuning.DEFAULT_MODE, "tau": tuning.DEFAULT_TAU, "drafter": tuning.DEFAULT_DRAFTER,
        "scan_layout": tuning.DEFAULT_SCAN_LAYOUT, "dpi": tuning.DPI, "max_new_tokens": tuning.MAX_NEW_TOKENS,
        "background_drafting": tuning.DEFAULT_BACKGROUND_DRAFTING, "model": None, "device": None}
    assert (args["ray_gpus_per_actor"], args["ray_cpus_per_actor"], args["ray_batch_size"], args["ray_retries"]) == (
        tuning.RAY_GPUS_PER_ACTOR, tuning.RAY_CPUS_PER_ACTOR, tuning.RAY_PAGES_AHEAD, tuning.RAY_RETRIES)


def test_draft_defaults_are_tuning_s():
    args = _defaults(["draft", "in.pdf"])
    assert (args["drafter"], args["scan_layout"]) == (tuning.DEFAULT_DRAFTER, tuning.DEFAULT_SCAN_LAYOUT)


def test_bench_defaults_are_tuning_s():
    args = _defaults(["bench", "corpus"])
    assert (args["dpi"], args["drafter"], args["background_drafting"], args["max_new_tokens"], args["gpu_pass_ms"],
            args["gpu_token_ms"]) == (tuning.DPI, tuning.DEFAULT_DRAFTER, tuning.DEFAULT_BACKGROUND_DRAFTING,
                                      tuning.BENCH_MAX_NEW_TOKENS, tuning.SIMULATED_GPU_PASS_MS,
                                      tuning.SIMULATED_GPU_TOKEN_MS)


def test_engine_config_defaults_are_tuning_s():
    from core.engine import EngineConfig, default_model

    config = EngineConfig()
    assert (config.mode, config.tau, config.drafter, config.dpi, config.max_new_tokens, config.background_drafting,
            config.region_pad_pt, config.stage1_batch, config.stage1_min_tokens) == (
        tuning.DEFAULT_MODE, tuning.DEFAULT_TAU, tuning.DEFAULT_DRAFTER, tuning.DPI, tuning.MAX_NEW_TOKENS,
        tuning.DEFAULT_BACKGROUND_DRAFTING, tuning.REGION_PAD_PT, tuning.STAGE1_BATCH, tuning.STAGE1_MIN_TOKENS)
    assert default_model() == tuning.DEFAULT_MODEL


def test_a_command_line_without_options_configures_the_engine_s_defaults():
    """What ``hsd convert IN -o OUT`` asks for is ``EngineConfig()`` with the default drafter's
    spec (it names the scan layout) and nothing else changed."""
    from core.api import drafter_spec, engine_config
    from core.engine import EngineConfig

    config = engine_config(build_parser().parse_args(["convert", "in.pdf", "-o", "out.md"]))
    expected = dataclasses.replace(EngineConfig(), drafter=drafter_spec(tuning.DEFAULT_DRAFTER))
    assert dataclasses.asdict(config) == dataclasses.asdict(expected)


def test_ray_options_defaults_are_tuning_s():
    from core.scale.ray_pipeline import RayOptions

    options = RayOptions()
    assert (options.gpus_per_actor, options.cpus_per_actor, options.batch_size, options.retries,
            options.max_task_retries, options.render_cpus, options.progress_every) == (
        tuning.RAY_GPUS_PER_ACTOR, tuning.RAY_CPUS_PER_ACTOR, tuning.RAY_PAGES_AHEAD, tuning.RAY_RETRIES,
        tuning.RAY_TASK_RETRIES, tuning.RAY_RENDER_CPUS, tuning.RAY_PROGRESS_SECONDS)


def test_a_patched_threshold_is_read_where_it_is_used(monkeypatch):
    """Code reads ``tuning.NAME`` when it runs, so a patch reaches it (no copies taken at import)."""
    from core.drafters.layout import TextLine, group_blocks

    upper = TextLine((0, 0, 100, 10), "one line of text", 10.0)
    lower = TextLine((0, 15, 100, 25), "and the next one", 10.0)  # 5 pt gap: half a line
    assert len(group_blocks([upper, lower])) == 1
    monkeypatch.setattr(tuning, "PARAGRAPH_GAP", 0.4)
    assert len(group_blocks([upper, lower])) == 2
