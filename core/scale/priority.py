"""The priorities of a Ray run's processes: the model actors at the driver's, the drafting below them.

Ray starts its worker processes at nice 15 (``RAY_worker_niceness``, read by the raylet when it
starts). On a cluster's own machines that only orders them below the machine's services; on a
user's desktop it starves them: beside any program at the normal priority (a browser, a build) a
model actor and the drafting tasks got almost no CPU. So a local instance that ``connect`` starts
has its workers at the driver's own priority (``local_workers_at_this_priority``: the variable set
for that start only, and only where the user has not set it); a cluster that is joined keeps its
own setting.

The drafting then yields to the decode as the drafting process of a run on one machine does
(``tuning.DRAFTING_PROCESS_NICE``, ``core.drafters.process.lower_priority``). A worker may lower its
own priority but never raise it again, and Ray reuses a worker for later tasks and actors of the
same runtime environment: a drafting task that lowered the worker it ran on could leave a later
model actor on a niced worker. So the drafting tasks run in workers of their own
(``drafting_runtime_env``: one more variable in their environment makes Ray keep a pool of workers
for them), and only there does a task lower its thread's priority (``lower_drafting_worker``, once
a thread: the drafter's model threads, started from it, inherit it). A model actor never runs in
such a worker, and a drafting task called outside Ray (tests) lowers nothing.

    local_workers_at_this_priority()   context manager around the ``ray.init`` that starts a
                                       local instance
    drafting_runtime_env(worker_env)   the drafting tasks' ``runtime_env``
    lower_drafting_worker()            first thing in a drafting task
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from core import tuning

#: Read by the raylet that ``ray.init`` starts: how much lower than its own its workers' priority is.
RAY_WORKER_NICENESS = "RAY_worker_niceness"
#: In a drafting worker's environment only: "NICE" or "NICE idle", how much it lowers itself
#: (``core.drafters.process.lower_priority``'s arguments).
DRAFTING_WORKER = "HSD_RAY_DRAFTING_PRIORITY"

_lowered = threading.local()


@contextmanager
def local_workers_at_this_priority():
    """Ray workers started by a raylet this block starts run at this process's priority; the
    environment is as it was once the block ends. A value the user set is kept (their choice)."""
    if RAY_WORKER_NICENESS in os.environ:
        yield
        return
    os.environ[RAY_WORKER_NICENESS] = "0"
    try:
        yield
    finally:
        os.environ.pop(RAY_WORKER_NICENESS, None)


def drafting_runtime_env(worker_env: dict) -> dict:
    """The ``runtime_env`` of the drafting tasks: ``worker_env`` and the drafting's priority, which
    also keeps their workers apart from the model actors' (module docstring)."""
    wanted = f"{tuning.DRAFTING_PROCESS_NICE}" + (" idle" if tuning.DRAFTING_PROCESS_IDLE else "")
    return {"env_vars": {**worker_env, DRAFTING_WORKER: wanted}}


def lower_drafting_worker() -> str:
    """In a drafting worker (``DRAFTING_WORKER`` in its environment), this thread's priority lowered
    as the drafting process lowers its own, once; elsewhere nothing. Returns what it got this call
    ("nice", "idle" or "")."""
    wanted = os.environ.get(DRAFTING_WORKER)
    if not wanted or getattr(_lowered, "done", False):
        return ""
    from core.drafters.process import lower_priority

    _lowered.done = True
    nice, _, idle = wanted.partition(" ")
    try:
        return lower_priority(int(nice), idle == "idle")
    except ValueError:  # not ours to read: left as it is
        return ""


__all__ = ["DRAFTING_WORKER", "RAY_WORKER_NICENESS", "drafting_runtime_env", "local_workers_at_this_priority",
           "lower_drafting_worker"]
