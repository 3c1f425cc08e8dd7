"""Fixtures of the reliability suite: one tiny model, the CLI run in-process with its output
captured, and the check every failure must pass (non-zero exit, one line, no traceback)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core.targets import loader  # noqa: E402
from tests.conftest import load_target_once  # noqa: E402

ARCH = "qwen2_5_vl"
#: What every conversion in this suite costs: a few tokens at a low resolution.
FAST = ["--drafter", "textlayer", "--max-new-tokens", "8", "--dpi", "36", "--device", "cpu", "-q"]
#: The same in plain decoding, for faults where the decoding mode does not matter (one prefill a page).
FAST_AR = FAST + ["--mode", "ar"]


@pytest.fixture(scope="session")
def model_dir(tiny_target_dir):
    return str(tiny_target_dir(ARCH))


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*args)`` -> (exit code, stdout, stderr) of ``hsd ARGS`` run in this process (model
    loads shared, see ``load_target_once``)."""
    from core.cli import main

    monkeypatch.setattr(loader, "load_target", load_target_once)

    def run(*args):
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def assert_clear_error(rc: int, err: str, *needles: str) -> None:
    """A failure as users must see it: exit code 1 or 2, one line on stderr, no traceback, no
    internal error, and the words that say what went wrong."""
    assert rc in (1, 2), (rc, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith("hsd: "), err
    for needle in needles:
        assert needle.lower() in lines[0].lower(), (needle, err)


@pytest.fixture
def small_fs(tmp_path):
    """``small_fs(size, ro=False)`` -> a folder on a tmpfs of ``size`` (needs root and mount rights;
    skips otherwise). Unmounted at teardown. ``remount(dir, options)`` changes it later."""
    mounted = []

    def make(size: str = "64k", ro: bool = False):
        import subprocess

        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        opts = f"size={size}" + (",ro" if ro else "")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode(errors='replace').strip()}")
        mounted.append(where)
        return where

    yield make
    import subprocess

    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def remount(where, options: str) -> None:
    import subprocess

    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True, capture_output=True)


# --- the real ``hsd`` in a subprocess ----------------------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hsd_command() -> list[str]:
    """The installed ``hsd`` entry point (``core.cli:main``), else the same function run by module;
    either way it imports this checkout's code (``PYTHONPATH``)."""
    import shutil
    import sys

    found = shutil.which("hsd")
    return [found] if found else [sys.executable, "-m", "core.cli"]


def run_hsd(*args, cwd=None, timeout: float = 600, prelude: str | None = None, env: dict | None = None):
    """``hsd ARGS`` in a fresh process -> (exit code, stdout, stderr). ``prelude``: Python run in that
    process before ``main`` (to make a fault the command line cannot make)."""
    import subprocess
    import sys

    environment = {**os.environ, "PYTHONPATH": REPO, "PYTHONIOENCODING": "utf-8", **(env or {})}
    if prelude is None:
        command = hsd_command()
    else:  # the prelude's patches live in that process: its pages are drafted there too
        prelude = "from core import tuning\ntuning.DRAFTING_PROCESS = False\n" + prelude
        command = [sys.executable, "-c", prelude + "\nimport sys\nfrom core.cli import main\nsys.exit(main())"]
    proc = subprocess.run(command + [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args],
                          cwd=cwd, capture_output=True, env=environment, timeout=timeout)
    return (proc.returncode, proc.stdout.decode("utf-8", errors="replace"),
            proc.stderr.decode("utf-8", errors="replace"))
