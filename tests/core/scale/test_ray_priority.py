"""A local Ray run's processes at the priorities of a run on one machine: the model actors at the
driver's (not Ray's nice 15, which starved them beside any other program), the drafting tasks below
them by the drafting process's niceness, in workers no model actor runs in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import tuning
from core.scale.priority import RAY_WORKER_NICENESS, local_workers_at_this_priority

ROOT = Path(__file__).resolve().parents[3]

# Its own Python: ``connect`` must start the instance (the tests' ``ray_local`` sets the workers'
# niceness itself, and a process holds one Ray instance at a time).
LOCAL_RUN = r"""
import json, os, sys
import ray
from core.scale.drafting import draft_on_worker, drafting_options
from core.scale.ray_pipeline import connect


def priority():
    return os.getpriority(os.PRIO_PROCESS, 0)


def drafted(data, name):
    regions, _, error = draft_on_worker("textlayer", [data], (name, None, "off", 0, 0))
    return os.getpid(), priority(), error is None and bool(regions)


class Actor:
    def where(self):
        return os.getpid(), priority()


pdf = sys.argv[1]
driver = priority()
started = connect(None, num_cpus=2)
left = os.environ.get("RAY_worker_niceness")
data = open(pdf, "rb").read()
task = ray.remote(drafted).options(**drafting_options(1, 256 << 20, 0))
drafting = ray.get([task.remote(data, os.path.basename(pdf)) for _ in range(4)])
actors = [ray.remote(Actor).options(num_cpus=1).remote() for _ in range(2)]  # as the model actors start
model = ray.get([actor.where.remote() for actor in actors])
ray.shutdown()
print(json.dumps({"driver": driver, "started": started, "left": left, "drafting": drafting, "model": model}))
"""


def test_a_local_runs_model_actors_run_at_the_drivers_priority_and_its_drafting_below(scale_inputs):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'hsd-studio[ray]')")
    env = {name: value for name, value in os.environ.items() if name != RAY_WORKER_NICENESS}
    done = subprocess.run([sys.executable, "-c", LOCAL_RUN, str(scale_inputs[0])], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=tuning.PATIENCE_SECONDS)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    driver = seen["driver"]
    assert seen["started"] and seen["left"] is None  # the driver's environment as it was
    assert [priority for _, priority in seen["model"]] == [driver, driver]
    assert all(ok for _, _, ok in seen["drafting"])
    assert {priority for _, priority, _ in seen["drafting"]} == {min(19, driver + tuning.DRAFTING_PROCESS_NICE)}
    # no model actor in a worker a drafting task lowered
    assert not {pid for pid, _ in seen["model"]} & {pid for pid, _, _ in seen["drafting"]}


def test_the_workers_priority_is_set_for_the_start_only_and_a_users_own_is_kept(monkeypatch):
    monkeypatch.delenv(RAY_WORKER_NICENESS, raising=False)
    with local_workers_at_this_priority():
        assert os.environ[RAY_WORKER_NICENESS] == "0"
    assert RAY_WORKER_NICENESS not in os.environ
    monkeypatch.setenv(RAY_WORKER_NICENESS, "7")
    with local_workers_at_this_priority():
        assert os.environ[RAY_WORKER_NICENESS] == "7"
    assert os.environ[RAY_WORKER_NICENESS] == "7"
