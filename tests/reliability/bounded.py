"""Run a piece of code in a fresh Python with a bound on its CPU time, so that a test of something that
once took minutes fails when it regresses instead of hanging the suite. The bound is on CPU seconds,
not the clock: on a busy machine a process gets a share of a core, and its clock runs slower than its
work."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core import tuning

ROOT = Path(__file__).resolve().parents[2]


def run_bounded(code: str, timeout: float) -> dict:
    """Run ``code`` (which prints one JSON object as its last line) with this tree first on the path and
    Qt offscreen; returns that object. Past ``timeout`` seconds of CPU (``RLIMIT_CPU``, set in the
    child) the child is stopped and the test fails; a child that waits without computing is stopped
    ``tuning.PATIENCE_SECONDS`` of the clock later. Code that times itself reads ``time.process_time``."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    seconds = math.ceil(timeout)
    bounded = f"import resource\nresource.setrlimit(resource.RLIMIT_CPU, ({seconds}, {seconds + 5}))\n" + code
    try:
        proc = subprocess.run([sys.executable, "-c", bounded], capture_output=True, text=True,
                              timeout=timeout + tuning.PATIENCE_SECONDS, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout + tuning.PATIENCE_SECONDS:.0f} s")
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        pytest.fail(f"still computing after {seconds} s of CPU")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
