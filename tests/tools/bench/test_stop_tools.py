"""The bench tools for stopped pages and the decode's wait for a core: their checks of what they
are given, and the counts they rest on (the runs themselves are benchmarks, not tests)."""

from __future__ import annotations

import numpy as np

from tools.bench import decode_core_wait, stop_lines


def test_a_missing_input_gets_one_line_and_no_run(tmp_path, capsys):
    assert stop_lines.main([str(tmp_path / "none.pdf")]) == 2
    assert decode_core_wait.main([str(tmp_path / "none")]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 2 and all("no such" in line for line in out)


def test_the_recogniser_count_tells_a_crop_read_twice_from_two_crops():
    class Inner:
        def read(self, crops):
            return [len(crops)] * len(crops)

    counter = stop_lines.CountingRecogniser(Inner())
    a, b = np.zeros((4, 8, 3), np.uint8), np.ones((4, 8, 3), np.uint8)
    counter.read([a, b])
    counter.read([a.copy()])
    seen = counter.take()
    assert sum(seen.values()) == 3 and len(seen) == 2 and not counter.seen


def test_the_wait_for_a_core_is_a_count_of_seconds_that_only_grows():
    first = decode_core_wait.run_delay()
    assert 0.0 <= first <= decode_core_wait.run_delay()
