"""Busy work beside a benchmark: processes that spin at the normal priority, as a browser or a build
loads a user's machine, started and stopped by the benchmark itself so that a busy figure says how
busy the machine was.

    with busy_processes(2):      # two cores' worth of spinning, gone when the block ends
        ...the timed runs...

The processes are started with ``multiprocessing``'s spawn context (a fresh interpreter: nothing of
the benchmark's threads or models is copied into them) as daemons, and the block's end terminates
and joins them whatever ends it: a return, an exception, Ctrl-C. Each also leaves on its own once its
parent is gone (a parent killed outright runs no ``finally``), so none can spin on unowned.
"""

from __future__ import annotations

import multiprocessing
import os
from contextlib import contextmanager

#: Spins between looks at whether the parent is still there (a look is a system call; a few a second).
_SPINS_BETWEEN_LOOKS = 2_000_000
#: Seconds a spinning process is given to end after SIGTERM before it is killed.
_STOP_SECONDS = 5.0


def spin(parent: int | None = None, started=None) -> None:
    """Keep one core busy until stopped, or until ``parent`` (a process id) is no longer this
    process's parent; ``started`` (an event) is set once spinning begins."""
    if started is not None:
        started.set()
    while True:
        for _ in range(_SPINS_BETWEEN_LOOKS):
            pass
        if parent is not None and os.getppid() != parent:
            return


def load_average() -> list[float] | None:
    """The machine's load average over 1, 5 and 15 minutes, rounded; None where the system has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


@contextmanager
def busy_processes(count: int, patience: float | None = None):
    """``count`` processes spinning at the normal priority for the duration of the block (module
    docstring); yields their list (empty for 0). ``patience``: seconds to wait for each to start
    spinning (default ``tuning.PATIENCE_SECONDS``), so that the block's work starts beside them."""
    from core import tuning

    context = multiprocessing.get_context("spawn")
    processes = []
    try:
        events = []
        for _ in range(max(0, count)):
            started = context.Event()
            process = context.Process(target=spin, args=(os.getpid(), started), daemon=True,
                                      name="hsd-bench-busy")
            process.start()
            processes.append(process)
            events.append(started)
        for started in events:
            started.wait(tuning.PATIENCE_SECONDS if patience is None else patience)
        yield processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(_STOP_SECONDS)
            if process.is_alive():
                process.kill()
                process.join()
