"""The command line's first minutes: every invocation that does not convert answers without
importing torch or transformers, arguments and model folders are checked before any work, the
password never has to go on the command line, the offline advice names a command that exists, and
a damaged PDF is called damaged.

Imports are checked by reading ``sys.modules`` in a fresh process (a count, not a timing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST, REPO, assert_clear_error, run_hsd

HEAVY = ("torch", "transformers")

#: Runs ``main`` on the arguments given and reports the exit code and which heavy modules it imported.
_IMPORTS = ("import sys, json\nfrom core.cli import main\n"
            "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as exc:\n    rc = exc.code\n"
            f"print(json.dumps({{'rc': rc, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n")


def _imports(*args, cwd=None) -> tuple[dict, str, str]:
    env = {**os.environ, "PYTHONPATH": REPO, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, *map(str, args)], capture_output=True, env=env,
                          timeout=300, cwd=cwd)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    return json.loads(out.strip().splitlines()[-1]), out, err


# --- commands that do not convert import neither torch nor transformers -----------------------------


@pytest.mark.parametrize("args", [["--help"], ["--version"], [], ["conver", "a.pdf"], ["tiny-model", "--help"],
                                  ["convert", "--help"], ["draft", "--help"], ["tiny-model", "x"]],
                         ids=["help", "version", "bare", "mistyped", "tiny-model-help", "convert-help",
                              "draft-help", "tiny-model-without-arch"])
def test_commands_that_do_not_convert_import_no_model_library(args):
    report, out, err = _imports(*args)
    assert report["heavy"] == [], (args, report)
    if not args:
        assert "COMMAND" in out  # the help, as for --help
    elif report["rc"]:  # an error is one line
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("hsd: error:"), err


def test_model_folders_that_cannot_load_are_one_line_before_torch(tmp_path):
    """``--model /nonexistent/model`` used to draw a 0 % progress bar and fail after 6 s of imports;
    a folder without config.json, or naming a family we do not support, likewise."""
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "llama"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "llama"}))
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    (no_weights / "pytorch_model.bin").write_bytes(b"pickle")
    cases = [("/nonexistent/model", "no such folder"), (empty, "no config.json"),
             (other, "'llama'"), (no_weights, "no *.safetensors")]
    for model, words in cases:
        report, _, err = _imports("convert", pdf, "-o", tmp_path / "out.md", "--model", model)
        assert report["heavy"] == [], (model, report)
        assert_clear_error(report["rc"], err, str(model), words)
        assert not (tmp_path / "out.md").exists() and "0%" not in err


def test_argument_errors_come_before_any_work(tmp_path):
    """``--dpi 0`` and ``--dpi -5`` used to be accepted (every page then failed); a device string
    with shell characters gave no clean error. One line, no model library imported, nothing
    written."""
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    for args, words in [(["--dpi", "0"], "dpi"), (["--dpi", "-5"], "dpi"), (["--tau", "0"], "tau"),
                        (["--max-new-tokens", "0"], "max-new-tokens"),
                        (["--device", "cuda; rm -rf ~"], "not a device"), (["--device", "gpu"], "not a device")]:
        report, _, err = _imports("convert", pdf, "-o", tmp_path / "out.md", "--model", "/nonexistent", *args)
        assert report["heavy"] == [], (args, report)
        assert_clear_error(report["rc"], err, words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pdf"]


def test_a_device_this_machine_does_not_have_is_one_line_before_the_model_loads(tmp_path, cli, model_dir,
                                                                                monkeypatch):
    from core.targets import loader

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(loader, "load_target", never)
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    fast = [a for a in FAST if a not in ("--device", "cpu")]
    for device in ("cuda:99", "mps:3" if sys.platform == "darwin" else "xpu:7"):
        rc, _, err = cli("convert", pdf, "-o", tmp_path / "out.md", "--model", model_dir, *fast, "--device", device)
        assert_clear_error(rc, err, device)
    assert not (tmp_path / "out.md").exists()


# --- the password ------------------------------------------------------------------------------------


def test_the_password_can_come_from_the_environment_or_a_prompt(tmp_path):
    """``--password`` shows the password to every user in the process list; ``HSD_PASSWORD`` and
    ``--ask-password`` keep it out, and ``--help`` says so."""
    pdf = h.encrypted_pdf(tmp_path / "locked.pdf", password="s3cret")
    env = {**os.environ, "PYTHONPATH": REPO, "PYTHONIOENCODING": "utf-8"}
    command = [sys.executable, "-m", "core.cli", "draft", str(pdf), "--drafter", "textlayer", "--json", "-"]
    from_env = subprocess.run(command, capture_output=True, env={**env, "HSD_PASSWORD": "s3cret"}, timeout=300)
    assert from_env.returncode == 0, from_env.stderr.decode()
    assert "Confidential" in from_env.stdout.decode()
    asked = subprocess.run(command + ["--ask-password"], input=b"s3cret\n", capture_output=True, env=env,
                           timeout=300)
    assert asked.returncode == 0, asked.stderr.decode()
    assert "Confidential" in asked.stdout.decode() and "s3cret" not in asked.stderr.decode()
    wrong = subprocess.run(command, capture_output=True, env={**env, "HSD_PASSWORD": "nope"}, timeout=300)
    assert_clear_error(wrong.returncode, wrong.stderr.decode(), "wrong password")
    missing = subprocess.run(command, capture_output=True, env={k: v for k, v in env.items() if k != "HSD_PASSWORD"},
                             timeout=300)
    assert_clear_error(missing.returncode, missing.stderr.decode(), "HSD_PASSWORD", "--ask-password")
    for sub in ("convert", "draft"):
        rc, out, _ = run_hsd(sub, "--help")
        assert rc == 0 and "HSD_PASSWORD" in out and "--ask-password" in out and "process list" in out, out


# --- offline advice ----------------------------------------------------------------------------------


def test_offline_advice_names_a_command_the_installed_hub_client_has():
    """The README and the error told offline users to run ``huggingface-cli download``, which
    huggingface-hub 2.x no longer installs; the advice must name one of its console scripts."""
    import re
    from importlib.metadata import distribution
    from pathlib import Path

    from core.errors import ModelLoadError
    from core.targets.loader import load_target

    scripts = {ep.name for ep in distribution("huggingface_hub").entry_points if ep.group == "console_scripts"}
    with pytest.raises(ModelLoadError) as error:
        load_target("/nonexistent/model")
    readme = (Path(REPO) / "README.md").read_text("utf-8")
    for text in (str(error.value), readme):
        commands = re.findall(r"`(\S+) download\b", text)
        assert commands, text[:300]
        assert set(commands) <= scripts, (commands, scripts)


# --- damaged PDFs ------------------------------------------------------------------------------------


def test_a_pdf_cut_short_is_called_damaged_by_draft_and_convert(tmp_path, cli, model_dir):
    """A PDF cut after 60 KB opens (MuPDF repairs it) and used to draft and convert without a word."""
    pdf = h.cut_pdf(tmp_path / "cut.pdf")
    rc, out, err = cli("draft", pdf, "--drafter", "textlayer", "--pages", "1")
    assert rc == 0 and "=== page 1" in out, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hsd: warning:") and "damaged" in lines[0], err
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "cut.md", "--model", model_dir, "--pages", "1", *FAST)
    assert rc == 0, err
    assert [ln for ln in err.splitlines() if "damaged" in ln and "cut.pdf" in ln], err
    assert (tmp_path / "cut.md").exists()
