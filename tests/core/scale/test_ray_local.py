"""The tests' local Ray instance (``ray_local``): its workers run at the tests' own priority, so a busy
machine slows the Ray tests as much as the others, not many times more."""

from __future__ import annotations

import os


def test_the_local_instances_workers_run_at_the_tests_priority(ray_local):
    @ray_local.remote(num_cpus=0)
    def niceness() -> int:
        return os.nice(0)

    assert ray_local.get(niceness.remote()) == os.nice(0)
