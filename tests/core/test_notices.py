"""``core.notices``: a run's thread hears its own ``HSDWarning``s (every time), other threads and
other warnings keep Python's handling."""

from __future__ import annotations

import threading
import warnings

from core.errors import HSDWarning
from core.notices import warnings_to


def test_a_runs_warnings_reach_its_sink_every_time_and_nested_runs_restore_the_outer():
    outer, inner = [], []
    with warnings_to(outer.append):
        warnings.warn("drafter step off", HSDWarning)
        with warnings_to(inner.append):
            warnings.warn("drafter step off", HSDWarning)
        warnings.warn("drafter step off", HSDWarning)  # the same message again is news to the run
    assert outer == ["drafter step off", "drafter step off"] and inner == ["drafter step off"]


def test_other_threads_and_other_warnings_are_not_taken(recwarn):
    heard = []
    with warnings_to(heard.append):
        warnings.warn("a library's own", UserWarning)
        thread = threading.Thread(target=lambda: warnings.warn("from elsewhere", HSDWarning))
        thread.start()
        thread.join()
    assert heard == []
    assert sorted(str(w.message) for w in recwarn) == ["a library's own", "from elsewhere"]
