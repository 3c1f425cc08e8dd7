"""``tools.bench.drafting_counts``: a scan page's drafting counted (lines, pixel columns, layout
calls, CPU per stage), the layout step put back afterwards."""

from __future__ import annotations

import json

import pytest

from tools.bench import drafting_counts as bench


def test_a_page_is_counted_and_the_layout_step_put_back(tmp_path, capsys):
    pytest.importorskip("rapidocr")
    from core.drafters import scan_layout
    from tools.bench import scan_set

    layout_groups = scan_layout.layout_groups
    _, scan, _, _ = scan_set.make_page("slide", 0)
    (tmp_path / "slide_000.pdf").write_bytes(scan)
    out = tmp_path / "counts.json"
    assert bench.main([str(tmp_path), "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    # every detected line read once, at its own width: 48 px high, at least 48 columns
    assert row["lines"] == row["detected"] >= 1 and row["lines_again"] == 0
    assert row["columns"] >= 48 * row["lines"]
    assert row["layout_calls"] == 1
    assert row["cpu"] > 0 and row["recognise_cpu"] > 0 and row["rec_run_cpu"] > 0
    assert "1 pages" in capsys.readouterr().out
    assert scan_layout.layout_groups is layout_groups
    with pytest.raises(SystemExit):  # an existing file is not overwritten
        bench.main([str(tmp_path), "--json", str(out)])


def test_a_line_is_counted_at_the_recognisers_input_width():
    import numpy as np

    assert bench.input_columns(np.zeros((24, 100, 3), np.uint8), 48) == 200
    assert bench.input_columns(np.zeros((48, 10, 3), np.uint8), 48) == 48
