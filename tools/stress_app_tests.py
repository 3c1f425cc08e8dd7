"""Run the app's test modules many times in a row while every core is kept busy, and report crashes.

A crash of the app (a segfault in teardown, a thread that outlives its window) shows on a busy
machine long before it shows on an idle one, so this script makes the machine busy itself: it starts
one spinning process per core, runs ``tests/app`` and ``tests/reliability/test_app_*.py`` in a fresh
pytest ``--runs`` times, and stops the spinning processes at the end (also on Ctrl-C).

Each run is reported as ``pass``, ``fail`` or ``crash`` (a negative exit status: killed by a signal,
or a "Segmentation fault" / "Fatal Python error" in its output); the last line sums them up. The exit
status is 0 only when every run passed. The output of every run that did not pass is kept in
``--logs`` (default: a new temporary folder).

    python tools/stress_app_tests.py                 # 20 runs
    python tools/stress_app_tests.py --runs 3 -- -x  # 3 runs, pytest arguments after --

This is no test of the suite: it takes a long time and loads the whole machine.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CRASH_WORDS = ("Segmentation fault", "Fatal Python error")


def app_test_modules(root: Path = ROOT) -> list[str]:
    """The app's test modules: every module under tests/app and the reliability modules of the app."""
    found = sorted((root / "tests" / "app").glob("test_*.py")) + sorted((root / "tests" / "reliability").glob("test_app_*.py"))
    return [str(p.relative_to(root)) for p in found]


def start_busy(count: int) -> list[subprocess.Popen]:
    """``count`` processes that each keep one core busy (a shell loop: no Python of ours in them)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for _ in range(count)]


def stop_busy(busy: list[subprocess.Popen]) -> None:
    for process in busy:
        if process.poll() is None:
            process.kill()
    for process in busy:
        process.wait()


def verdict(returncode: int, output: str) -> str:
    """``crash``, ``fail`` or ``pass`` for one pytest run."""
    if returncode < 0 or any(word in output for word in CRASH_WORDS):
        return "crash"
    return "pass" if returncode == 0 else "fail"


def summary(verdicts: list[str]) -> str:
    counts = {v: verdicts.count(v) for v in ("pass", "fail", "crash")}
    return f"{len(verdicts)} runs: {counts['pass']} passed, {counts['fail']} failed, {counts['crash']} crashed"


def run_once(modules: list[str], pytest_args: list[str], timeout: float) -> tuple[int, str, float]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONFAULTHANDLER="1")
    command = [sys.executable, "-X", "faulthandler", "-m", "pytest", "-p", "no:cacheprovider",
               *pytest_args, *modules]
    start = time.monotonic()
    # a session of its own: a run that hangs past the timeout is ended with everything it started
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        output += f"\n(stopped after {timeout:.0f} s)\n"
        return 124, output, time.monotonic() - start
    except BaseException:  # Ctrl-C: the run's process group goes too
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return process.returncode, output, time.monotonic() - start


def last_line(output: str) -> str:
    """pytest's summary line ("3 failed, 120 passed in 300 s"), else the last line of the output."""
    lines = [line.strip("= ") for line in output.strip().splitlines() if line.strip()]
    counts = [line for line in lines if re.search(r"\d+ (passed|failed|errors?)\b", line)]
    return (counts or lines or ["(no output)"])[-1]


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="how many runs in a row (default 20)")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1,
                        help="busy processes to start (default: one per core)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds one run may take (default 3600)")
    parser.add_argument("--logs", type=Path, default=None, help="folder for the output of runs that did not pass")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    modules = app_test_modules()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="stress-app-tests-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"{len(modules)} modules, {args.runs} runs, {args.busy} busy processes; logs of runs that do not "
          f"pass go to {logs}", flush=True)
    # a terminated script stops its busy processes as Ctrl-C does
    signal.signal(signal.SIGTERM, _interrupt)
    busy = start_busy(args.busy)
    verdicts: list[str] = []
    try:
        for n in range(1, args.runs + 1):
            code, output, seconds = run_once(modules, args.pytest_args, args.timeout)
            result = verdict(code, output)
            verdicts.append(result)
            note = ""
            if result != "pass":
                log = logs / f"run-{n:02d}-{result}.log"
                log.write_text(output, "utf-8")
                note = f"; output in {log}"
            print(f"run {n}/{args.runs}: {result} (exit {code}, {seconds:.0f} s): {last_line(output)}{note}",
                  flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    finally:
        stop_busy(busy)
        print(summary(verdicts), flush=True)
    return 0 if all(v == "pass" for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
