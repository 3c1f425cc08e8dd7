"""tools.bench.figure_layout_runs: its summary of the counted rows and its answer to a missing file."""

from __future__ import annotations

from tools.bench import figure_layout_runs


def _row(mode, page, figure=True, layout_cpu=(0.5, 0.1), image=1, as_whole=True, pdf="a.pdf"):
    return {"pdf": pdf, "mode": mode, "page": page, "layout_runs": len(layout_cpu), "layout_cpu": list(layout_cpu),
            "image_network_runs": image, "cpu_seconds": 1.0, "figure": figure, "markdown_as_whole": as_whole,
            "regions": []}


def test_the_summary_counts_figure_pages_after_the_first_only():
    rows = [_row("whole", 1), _row("whole", 2), _row("whole", 3, figure=False),
            _row("stopped", 1, layout_cpu=(0.5,)), _row("stopped", 2, image=2, as_whole=False),
            _row("stopped", 3, layout_cpu=(0.5,))]
    lines = figure_layout_runs.summary(rows)
    assert lines[0].endswith(": 1")
    assert lines[1].split()[:8] == ["stopped", "layout", "runs", "2,", "image", "network", "runs", "2,"]
    assert "second layout run median 0.100 s" in lines[1] and lines[1].endswith("whole read's 0/1")


def test_a_missing_file_is_one_line(tmp_path, capsys):
    assert figure_layout_runs.main([str(tmp_path / "out.json"), str(tmp_path / "none.pdf")]) == 2
    out = capsys.readouterr().out
    assert out.strip().count("\n") == 0 and "none.pdf" in out
