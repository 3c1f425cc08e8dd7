"""Run a piece of code in a fresh Python with a time limit, so that a test of something that once took
minutes fails when it regresses instead of hanging the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_bounded(code: str, timeout: float) -> dict:
    """Run ``code`` (which prints one JSON object as its last line) with this tree first on the path and
    Qt offscreen; returns that object. Past ``timeout`` seconds the child is killed and the test fails."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout:.0f} s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
