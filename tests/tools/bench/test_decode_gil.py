"""The decode thread's interpreter-lock breakdown tool: its check of what it is given and the counts
it rests on (the run itself is a benchmark, not a test)."""

from __future__ import annotations

import sys
import time
import types

from tools.bench import decode_gil


def test_a_missing_folder_gets_one_line_and_no_run(tmp_path, capsys):
    assert decode_gil.main([str(tmp_path / "none")]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no such folder" in out[0]


def test_a_timed_call_counts_its_own_time_not_the_timed_calls_inside_it(monkeypatch):
    module = types.ModuleType("gil_probe_module")
    module.inner = lambda: time.sleep(0.02)
    module.outer = lambda: module.inner()
    monkeypatch.setitem(sys.modules, "gil_probe_module", module)
    clock = decode_gil.CallClock()
    clock.wrap("gil_probe_module", "inner", "inner")
    clock.wrap("gil_probe_module", "outer", "outer")
    module.outer()  # no method's run on: not counted
    assert not clock.calls
    clock.method = "hsd"
    module.outer()
    clock.restore()
    assert clock.calls == {("hsd", "inner"): 1, ("hsd", "outer"): 1}
    assert clock.wall[("hsd", "inner")] >= 0.02 > clock.wall[("hsd", "outer")]
    module.outer()  # restored: nothing more counted
    assert clock.calls[("hsd", "outer")] == 1


def test_the_sleeps_asked_for_are_counted_per_thread():
    counter = decode_gil.SleepCounter(time)
    counter.sleep(0.001)
    counter.sleep(0.002)
    assert list(counter.sleeps.values()) == [2] and abs(sum(counter.asked.values()) - 0.003) < 1e-12
    assert counter.perf_counter() > 0  # everything else is the real module's
