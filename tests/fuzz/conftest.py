"""Bounded fuzzing with hypothesis: a fixed, derandomised budget in CI (the whole set runs in about
a minute on two cores). ``HSD_FUZZ_EXAMPLES=5000`` runs more examples with fresh randomness."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

_MORE = int(os.environ.get("HSD_FUZZ_EXAMPLES", "0"))


def fuzz_settings(examples: int):
    """``settings`` for one fuzz test: ``examples`` in CI, ``HSD_FUZZ_EXAMPLES`` when set."""
    return settings(max_examples=_MORE or examples, deadline=None, derandomize=not _MORE, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
