"""A chart drawn in vectors is one figure region with its labels (``core.drafters.charts``), on a
generated page: axes, a polyline, tick labels on both axes, a legend, between paragraphs."""

from __future__ import annotations

import json

import pymupdf
import pytest

from core.cli import main

ABOVE = ("Sales grew in every quarter of the year. The chart below shows the share of the market held "
         "by the company against the index, month by month.")
BELOW = ("The company ended the year well ahead of the index. Its margin held while its volume doubled, "
         "and the board expects the same next year.")


def chart_page(path, y_ticks: int = 11, x_ticks: int = 9, bars: bool = False):
    """An A4 page: a paragraph, a chart (axes, a polyline or bars, ``y_ticks`` percentages on the
    left axis, ``x_ticks`` months under it, a legend), a paragraph."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 130), ABOVE, fontsize=10.5)
    left, top, right, bottom = 110, 180, 480, 400
    shape = page.new_shape()
    shape.draw_line((left, top), (left, bottom))
    shape.draw_line((left, bottom), (right, bottom))
    shape.finish(color=(0.3, 0.3, 0.3), width=0.8)
    for i in range(y_ticks):
        y = bottom - i * (bottom - top) / (y_ticks - 1)
        page.insert_text((left - 32, y + 3), f"{i * 40}%", fontsize=7)
    step = (right - left) / (x_ticks + 1)
    for i in range(x_ticks):
        page.insert_text((left + (i + 1) * step - 12, bottom + 12), f"2021-{i + 1:02d}", fontsize=7)
    if bars:
        for i in range(x_ticks):
            x = left + (i + 1) * step - 6
            shape.draw_rect(pymupdf.Rect(x, bottom - 20 - 15 * (i % 5), x + 12, bottom))
            shape.finish(fill=(0.2, 0.4, 0.8), color=None)
    else:
        points = [(left + (i + 1) * step, bottom - 20 - ((i * 37) % 150)) for i in range(x_ticks)]
        shape.draw_polyline(points)
        shape.finish(color=(0.7, 0.5, 0.3), width=1.2)
    shape.draw_line((left + 20, top - 12), (left + 40, top - 12))
    shape.finish(color=(0.7, 0.5, 0.3), width=1.2)
    shape.commit()
    page.insert_text((left + 44, top - 9), "Company", fontsize=7)
    page.insert_textbox(pymupdf.Rect(72, 440, 523, 500), BELOW, fontsize=10.5)
    doc.save(path)
    return path


def _draft(pdf, capsys) -> list[dict]:
    assert main(["draft", str(pdf), "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)["pages"][0]["regions"]


@pytest.mark.parametrize("bars", [False, True])
def test_a_chart_is_one_figure_with_its_labels(tmp_path, capsys, bars):
    regions = _draft(chart_page(tmp_path / "chart.pdf", bars=bars), capsys)
    figures = [r for r in regions if r["label"] == "figure"]
    assert len(figures) == 1
    figure = figures[0]
    for label in ("0%", "400%", "2021-01", "2021-09", "Company"):
        assert label in figure["text"].split()
    x0, y0, x1, y1 = figure["bbox"]
    assert x0 <= 80 and y0 <= 170 and x1 >= 480 and y1 >= 410  # the axes, ticks and legend
    texts = [r["text"] for r in regions if r["label"] == "text"]
    assert texts == [" ".join(ABOVE.split()), " ".join(BELOW.split())]  # the paragraphs stay as they were


def test_numbers_without_a_plotted_graphic_stay_text(tmp_path, capsys):
    """A column of numbers beside a plain frame (level and upright strokes only) is no chart."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.draw_rect(pymupdf.Rect(100, 100, 300, 300), color=(0, 0, 0))
    for i in range(6):
        page.insert_text((120, 130 + 25 * i), f"Item {i}: the widget count is {100 + i}", fontsize=10)
    doc.save(tmp_path / "frame.pdf")
    regions = _draft(tmp_path / "frame.pdf", capsys)
    assert not [r for r in regions if r["label"] == "figure"]


def test_the_research_report_chart_is_one_figure(capsys):
    """The report page whose line chart came out as 26 figure regions of one tick label each."""
    from pathlib import Path

    pdf = Path(__file__).resolve().parents[4] / "shared" / "corpus" / "pairs" / "mineru_research_report_1f978cd8_9ec2c054.pdf"
    if not pdf.is_file():
        pytest.skip("the shared corpus is not beside this checkout")
    assert main(["draft", str(pdf), "--pages", "1", "--json", "-"]) == 0
    regions = json.loads(capsys.readouterr().out)["pages"][0]["regions"]
    figures = [r for r in regions if r["label"] == "figure"]
    assert len(figures) == 1 and "380%" in figures[0]["text"] and "2022-07" in figures[0]["text"]
