"""``python -m tools.bench.turn_check``: every scanned page's turn, what decided it, and the counts."""

from __future__ import annotations

from tools.bench import turn_check
from tests.core.drafters.test_ink_turn import _scan, article


def test_the_turned_set_s_names_say_the_turn():
    assert turn_check.expected_turn("page90_013", "name") == 90
    assert turn_check.expected_turn("slide270_004", "name") == 270
    assert turn_check.expected_turn("page180_003", "upright") == 0
    assert turn_check.expected_turn("article1_000", "name") == 0


def test_percentile_takes_a_measured_value():
    assert turn_check.percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert turn_check.percentile([float(v) for v in range(11)], 0.9) == 9.0


def test_an_upright_scan_and_its_turned_copies(tmp_path, capsys):
    pairs = tmp_path / "scans" / "pairs"
    pairs.mkdir(parents=True)
    _scan(pairs / "article_000.pdf", 0)
    article().save(pairs / "born_000.pdf")  # a text layer: no scan to check
    assert turn_check.main([str(tmp_path / "scans"), "--ink-turned"]) == 0
    out = capsys.readouterr().out
    assert "born_000" not in out
    assert "1 scanned pages: 1 upright as drawn called upright by the ink alone" in out
    assert "0 of 3 turned copies wrongly called upright" in out
    assert turn_check.main([str(tmp_path / "scans")]) == 0
    assert "1 scanned pages: 1 decided right, 0 wrong; 1 by the ink alone" in capsys.readouterr().out
