"""The façade: cheap to import (no torch, no PyMuPDF until a name needs them), every listed name
served, no benchmark module through it, one call to convert a document."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import core.api as api
from core import tuning

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_facade_loads_neither_torch_nor_pymupdf():
    code = ("import sys, core.api\n"
            "print([m for m in ('torch', 'pymupdf', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_every_listed_name_is_served_and_the_benchmark_is_not():
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    from core.engine import Engine

    assert api.Engine is Engine
    source = (ROOT / "core" / "api.py").read_text("utf-8")
    assert "core.bench" not in source and "import_module" not in source
    with pytest.raises(AttributeError):
        api.ReplayTarget  # noqa: B018


def test_a_conversion_is_one_call_with_a_request(tmp_path):
    config = api.EngineConfig(drafter="textlayer")
    settings = api.settings_of(config)
    assert settings["model"] == "default" and settings["dpi"] == config.dpi
    request = api.ConversionRequest(tmp_path / "in.pdf", tmp_path / "out.md", config)
    run = api.convert_document(request)  # an engine of the request's settings, loading nothing yet
    assert isinstance(run, api.DocumentRun) and run.decoder.config is config and not run.decoder.loaded
    run.close()  # never started: nothing to stop, nothing written
    assert not (tmp_path / "out.md").exists()
    with pytest.raises(ValueError):  # an engine of other settings would write under the wrong resume key
        api.convert_document(request, api.Engine(api.EngineConfig(mode="ar")))


def test_engine_config_reads_a_convert_command_line():
    from core.cli import build_parser

    args = build_parser().parse_args(["convert", "in.pdf", "-o", "out.md", "--mode", "page", "--dpi", "100",
                                      "--background-drafting", "off"])
    config = api.engine_config(args)
    assert (config.mode, config.dpi, config.background_drafting) == ("page", 100, "off")
    assert config.max_new_tokens == tuning.MAX_NEW_TOKENS  # the command line's default is the engine's
