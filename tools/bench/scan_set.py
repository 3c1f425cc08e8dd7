"""The generated scan set: pages of the kinds people convert, each born-digital and scanned.

    python -m tools.bench.scan_set --seed 29 --out scanset

writes, for every page, ``scanset/born/pairs/KIND_NNN.pdf`` (typeset by ``tools.bench.scan_pages``, with
a text layer), ``scanset/scan/pairs/KIND_NNN.pdf`` (the same page rendered at 150-300 dpi, skewed,
blurred, unevenly lit, with noise, saved as JPEG: an image-only PDF), the reference Markdown beside
each (the generator's own), and ``scanset/layout/KIND_NNN.json``: the regions as laid out (label,
box, reading-order index, text) and the scan's parameters, which ``tools.bench.scan_report`` compares
with what a drafter found. ``hsd bench scanset/born`` and ``hsd bench scanset/scan`` measure both
halves; the kind is the file name up to ``_``.

Everything follows from the seed (``random.Random("SEED:KIND:N")`` per page): the same seed gives
the same pages. Nothing is downloaded and nothing binary is kept in the repository.

Kinds: ``article1`` / ``article2`` / ``article3`` (one-, two- and three-column articles),
``newspaper`` (masthead, rules, column rules, a boxed notice), ``gazette`` (an official register in
three ruled columns of small type), ``report`` (tables and a chart), ``formula`` (inline and display
formulas), ``form``, ``slide``, ``chinese``, ``japanese``, ``mixed`` (Chinese with Latin terms),
``fraktur`` (German set in blackletter).
"""

from __future__ import annotations

import argparse
import io
import json
import random
from pathlib import Path

from core.commands.arguments import whole_number
from tools.bench import scan_text as tx
from tools.bench.scan_pages import Block, PageBuilder, Style

KINDS = ("article1", "article2", "article3", "newspaper", "gazette", "report", "formula", "form", "slide",
         "chinese", "japanese", "mixed", "fraktur")
DEFAULT_SEED = 29
PAGES_PER_KIND = 12
A4, LETTER, SLIDE = (595.0, 842.0), (612.0, 792.0), (720.0, 405.0)

SERIF, SANS = Style("tiro", 10.0, align="justify"), Style("helv", 10.0)
HEAD = Style("hebo", 12.0)


def _heading(rng, style: Style, text: str, level: int = 2) -> Block:
    return Block("title", "#" * level + " " + text, style, text=text, space_before=1.0)


def _para(text: str, style: Style) -> Block:
    return Block("text", text, style)


def _items(items: list[str], style: Style, numbered: bool = False) -> Block:
    marks = [f"{k + 1}." for k in range(len(items))] if numbered else ["-"] * len(items)
    markdown = "\n".join(f"{m} {it}" for m, it in zip(marks, items))
    if numbered:  # the number is part of each line's text
        return Block("list", markdown, style, text=[f"{m} {it}" for m, it in zip(marks, items)])
    return Block("list", markdown, style, text=items, bullet="\u2022")


def _running(b: PageBuilder, rng, text: str, style: Style = Style("helv", 8.0)) -> None:
    """A running header and a page number: on the page, in no reference (readers leave them out)."""
    b.text_line(text, style, 56, b.width - 56, 24)
    b.text_line(str(rng.randint(2, 480)), style.with_(align="center"), 56, b.width - 56, b.height - 34)


def _english_body(rng, style: Style, sections: int, heading: Style, lists: bool = True) -> list[Block]:
    blocks = []
    for s in range(sections):
        blocks.append(_heading(rng, heading, f"{s + 1}. {tx.english_heading(rng)}" if rng.random() < 0.5
                               else tx.english_heading(rng)))
        for _ in range(rng.randint(1, 3)):
            blocks.append(_para(tx.english_paragraph(rng), style))
        if lists and rng.random() < 0.3:
            blocks.append(_items([tx.english_item(rng) for _ in range(rng.randint(2, 4))], style,
                                 numbered=rng.random() < 0.4))
    return blocks


# --- kinds -----------------------------------------------------------------------------------------


def article(rng, columns: int) -> PageBuilder:
    w, h = rng.choice([A4, LETTER])
    b = PageBuilder(w, h)
    serif = rng.random() < 0.6
    body = (SERIF if serif else SANS.with_(align=rng.choice(["left", "justify"]))).with_(
        size=rng.choice([10.0, 10.5, 11.0]) if columns == 1 else rng.choice([8.5, 9.0, 9.5]))
    head = HEAD.with_(font="tibo" if serif else "hebo", size=body.size + 1.5)
    _running(b, rng, f"{tx.english_heading(rng)} \u2014 {tx.date(rng)}")
    m = 56 if columns > 1 else 72
    y = b.text_line(tx.english_heading(rng) + " " + rng.choice(["Review", "Survey", "Study", "Report"]),
                    head.with_(size=20.0 if columns < 3 else 26.0, align="center" if columns == 2 else "left"),
                    m, w - m, 60, label="title", heading=1)
    y = b.text_line(", ".join(tx.person(rng) for _ in range(rng.randint(1, 3))),
                    body.with_(font="helv", align="center" if columns == 2 else "left", size=10), m, w - m,
                    y + 6, label="text") + 8
    if columns == 2:  # an abstract across both columns
        y = b.flow([_heading(rng, head, "Abstract"), _para(tx.english_paragraph(rng, (3, 4)), body)],
                   m + 30, w - m - 30, y, h - 60) + 12
    elif columns == 3:  # a standfirst in a larger face
        y = b.flow([_para(tx.english_paragraph(rng, (2, 2)), SANS.with_(size=12.5, font="hebo"))], m, w - m,
                   y, h - 60) + 10
    blocks = _english_body(rng, body, {1: 3, 2: 5, 3: 6}[columns], head)
    chart_at = None
    if columns == 1 and rng.random() < 0.5:
        chart_at = rng.randint(2, len(blocks) - 1)
        blocks = blocks[:chart_at]
    y = b.flow(blocks, m, w - m, y, h - 60, columns=columns, gutter=16 if columns < 3 else 12,
               rules=columns == 3 and rng.random() < 0.5)
    if chart_at is not None and y < h - 260:
        labels = [str(2015 + k) for k in range(rng.randint(4, 7))]
        b.chart((m + 40, y + 10, w - m - 40, y + 170), [rng.uniform(5, 50) for _ in labels], labels, SANS)
        y = b.text_line(f"Figure {rng.randint(1, 9)}. {tx.english_sentence(rng)}", body.with_(size=9),
                        m + 40, w - m - 40, y + 178, label="caption")
        b.flow([_para(tx.english_paragraph(rng), body)], m, w - m, y + 10, h - 60)
    return b


def newspaper(rng) -> PageBuilder:
    w, h = rng.choice([A4, (612.0, 900.0)])
    b = PageBuilder(w, h)
    m = 30
    title = "The " + tx.place(rng) + " " + rng.choice(["Courier", "Gazette", "Herald", "Chronicle", "Observer"])
    y = b.text_line(title, Style(rng.choice(["fraktur", "tibo"]), 34.0, align="center"), m, w - m, 20,
                    label="title", heading=1)
    b.rule(m, w - m, y + 2, 1.2)
    y = b.text_line(f"Vol. {rng.randint(2, 90)}, No. {rng.randint(1, 300)} \u2014 {tx.date(rng, weekday=True)}"
                    f" \u2014 Price {rng.randint(5, 95)} cents", Style("helv", 8.0, align="center"), m, w - m,
                    y + 5, label="text")
    b.rule(m, w - m, y + 1, 0.6)
    b.rule(m, w - m, y + 3, 1.2)
    body = Style("tiro", rng.choice([8.0, 8.5, 9.0]), align="justify")
    cols = rng.choice([4, 5])
    y = b.text_line(tx.english_heading(rng).upper(), Style("tibo", 20.0, align="center"), m, w - m, y + 10,
                    label="title", heading=2) + 4
    lead = [_para(tx.english_paragraph(rng, (3, 5)), body) for _ in range(rng.randint(3, 5))]
    lead.insert(2, _heading(rng, Style("tibo", 10.0), tx.english_heading(rng), level=3))
    y = b.flow(lead, m, w - m, y, y + (h - y) * 0.5, columns=cols, gutter=10, rules=True) + 6
    b.rule(m, w - m, y, 0.8)
    # a second story over the left columns, a boxed notice at the right
    split = m + (w - 2 * m) * (cols - 2) / cols
    y2 = b.text_line(tx.english_heading(rng), Style("tibo", 14.0), m, split - 8, y + 6, label="title",
                     heading=2) + 2
    b.flow([_para(tx.english_paragraph(rng, (3, 5)), body) for _ in range(4)], m, split - 8, y2, h - 30,
           columns=cols - 2, gutter=10, rules=True)
    top = y + 8
    bottom = min(h - 40, top + 240)
    b.box((split + 4, top, w - m, bottom), width=1.0)
    ty = b.text_line(rng.choice(["NOTICE", "PUBLIC NOTICE", "ANNOUNCEMENT"]), Style("hebo", 11.0, align="center"),
                     split + 10, w - m - 6, top + 6, label="title", heading=3)
    b.flow([_para(tx.english_paragraph(rng, (2, 4)), body.with_(font="helv", align="left"))],
           split + 10, w - m - 6, ty + 4, bottom - 6)
    return b


def gazette(rng) -> PageBuilder:
    w, h = LETTER
    b = PageBuilder(w, h)
    m = 36
    b.text_line(f"{rng.randint(10000, 99999)}  Federal Gazette / Vol. {rng.randint(40, 90)}, No. "
                f"{rng.randint(1, 250)} / {tx.date(rng, weekday=True)} / Rules and Regulations",
                Style("helv", 7.5), m, w - m, 22)
    b.rule(m, w - m, 34, 0.8)
    body = Style("tiro", rng.choice([8.0, 8.5]), align="justify", leading=1.2)
    bold = Style("tibo", body.size, align="left")
    blocks = []
    for _ in range(rng.randint(2, 3)):
        agency = f"DEPARTMENT OF THE {rng.choice(['INTERIOR', 'TREASURY', 'COMMERCE', 'AGRICULTURE'])}"
        blocks.append(Block("title", "## " + agency, bold.with_(size=body.size + 1.5), text=agency, space_before=1.2))
        for label in ("AGENCY", "ACTION", "SUMMARY", "DATES"):
            text = f"{label}: " + (tx.english_sentence(rng) if label != "SUMMARY" else tx.english_paragraph(rng, (3, 6)))
            blocks.append(_para(text, body))
        blocks.append(_heading(rng, bold, "SUPPLEMENTARY INFORMATION:", level=3))
        blocks += [_para(tx.english_paragraph(rng, (3, 6)), body) for _ in range(rng.randint(2, 4))]
    b.flow(blocks, m, w - m, 44, h - 36, columns=3, gutter=12, rules=True)
    return b


def report(rng) -> PageBuilder:
    w, h = A4
    b = PageBuilder(w, h)
    body = SANS.with_(size=rng.choice([9.5, 10.0]))
    _running(b, rng, f"{tx.place(rng)} {rng.choice(['Annual', 'Quarterly'])} Report {rng.randint(2001, 2024)}")
    y = b.text_line(tx.english_heading(rng), HEAD.with_(size=16), 60, w - 60, 56, label="title", heading=2)
    y = b.flow([_para(tx.english_paragraph(rng), body) for _ in range(rng.randint(1, 2))], 60, w - 60, y + 8,
               h - 60) + 10
    for t in range(rng.randint(2, 3)):
        rows = tx.table_rows(rng, rng.randint(4, 8), rng.randint(3, 6))
        cap = f"Table {t + 1}. {tx.english_heading(rng)}" if rng.random() < 0.8 else ""
        y = b.table(rows, 60, y, body.with_(size=9.0), w - 120, ruled=rng.choice(["grid", "booktabs"]), caption=cap)
        if y > h - 160:
            return b
        y = b.flow([_heading(rng, HEAD.with_(size=11.5), tx.english_heading(rng), level=3),
                    _para(tx.english_paragraph(rng), body), _para(tx.english_paragraph(rng), body)],
                   60, w - 60, y + 6, h - 60) + 10
    if y < h - 240 and rng.random() < 0.6:
        labels = ["Q1", "Q2", "Q3", "Q4"]
        b.chart((100, y, w - 100, y + 150), [rng.uniform(10, 90) for _ in labels], labels, SANS)
        b.text_line(f"Figure 1. {tx.english_sentence(rng)}", body.with_(size=9), 100, w - 100, y + 156,
                    label="caption")
    return b


_DISPLAY = (r"E = \sum_{i=1}^{N} w_{i} x_{i}^{2}", r"\int_{0}^{1} x^{k} \, dx = \frac{1}{k+1}",
            r"a^{2} + b^{2} = c^{2}", r"P(A | B) = \frac{P(B | A) P(A)}{P(B)}",
            r"f(x) = \frac{1}{\sqrt{2 \pi}} e^{-x^{2} / 2}", r"\bar{x} = \frac{1}{n} \sum_{j=1}^{n} x_{j}",
            r"L(\theta) = \prod_{i=1}^{n} p(y_{i} | \theta)", r"\nabla \cdot u = 0",
            r"y_{t} = \alpha y_{t-1} + \beta x_{t} + \epsilon_{t}", r"\lambda_{\max} \leq \| A \|_{2}",
            r"s^{2} = \frac{1}{n-1} \sum_{i=1}^{n} (x_{i} - \bar{x})^{2}", r"x = \frac{-b \pm \sqrt{b^{2} - 4ac}}{2a}")
_INLINE = (r"x_{i}", r"n = {n}", r"\alpha = 0.{d}", r"O(n \log n)", r"\sigma^{2}", r"k \geq {d}", r"\theta",
           r"\lambda_{1}", r"p < 0.05", r"f(x)", r"2^{{d}}", r"\epsilon")


def _with_inline(rng, sentence: str) -> str:
    words = sentence.split(" ")
    k = rng.randint(1, len(words) - 1)
    math = rng.choice(_INLINE).replace("{n}", str(rng.randint(3, 99))).replace("{d}", str(rng.randint(1, 9)))
    return " ".join(words[:k] + [rng.choice(["with", "where", "for"]), f"${math}$"] + words[k:])


def formula(rng) -> PageBuilder:
    w, h = rng.choice([A4, LETTER])
    b = PageBuilder(w, h)
    columns = rng.choice([1, 1, 2])
    body = SERIF.with_(size=10.0 if columns == 1 else 9.0)
    _running(b, rng, f"Journal of {tx.english_heading(rng)}")
    y = b.text_line(tx.english_heading(rng), HEAD.with_(font="tibo", size=17), 60, w - 60, 56, label="title",
                    heading=1)
    blocks = []
    displays = rng.sample(_DISPLAY, 7)
    for s in range(5 if columns == 1 else 7):
        blocks.append(_heading(rng, HEAD.with_(font="tibo", size=body.size + 1.5), f"{s + 1}. {tx.english_heading(rng)}"))
        for _ in range(rng.randint(1, 3)):
            sentences = [tx.english_sentence(rng) for _ in range(rng.randint(2, 4))]
            for k in rng.sample(range(len(sentences)), rng.randint(1, 2)):
                sentences[k] = _with_inline(rng, sentences[k])
            blocks.append(_para(" ".join(sentences), body))
            if displays and rng.random() < 0.7:
                latex = displays.pop()
                blocks.append(Block("formula", f"$$\n{latex}\n$$", body, formula=latex))
    b.flow(blocks, 60, w - 60, y + 10, h - 60, columns=columns)
    return b


def form(rng) -> PageBuilder:
    w, h = LETTER
    b = PageBuilder(w, h)
    title = rng.choice(["Application for a Permit", "Change of Address", "Registration Form", "Claim Form"])
    y = b.text_line(title, HEAD.with_(size=18, align="center"), 60, w - 60, 50, label="title", heading=1)
    y = b.flow([_para(tx.english_paragraph(rng, (1, 2)), SANS.with_(size=9.5))], 60, w - 60, y + 8, h - 60) + 10
    fields = rng.sample(["Surname", "Given names", "Date of birth", "Address", "Town", "Postcode", "Telephone",
                         "Reference number", "Occupation", "Nationality", "Email", "Employer"], 8)
    values = [tx.person(rng), tx.place(rng), tx.date(rng), f"{rng.randint(1, 200)} {tx.place(rng)} Road",
              tx.place(rng), f"{rng.choice('ABCDEFGH')}{rng.randint(10, 99)} {rng.randint(1, 9)}XY",
              f"0{rng.randint(100, 999)} {rng.randint(100000, 999999)}", f"R-{rng.randint(10000, 99999)}"]
    rows = [["Field", "Entry", "Field", "Entry"]] + [
        [fields[2 * k], values[2 * k], fields[2 * k + 1], values[2 * k + 1]] for k in range(4)]
    y = b.table(rows, 60, y, SANS.with_(size=9.5), w - 120, ruled="grid",
                caption="Section A. " + rng.choice(["Applicant", "Personal details", "Contact"]))
    y = b.text_line("Section B. " + rng.choice(["Declaration", "Purpose", "Eligibility"]), HEAD.with_(size=11),
                    60, w - 60, y + 6, label="title", heading=2)
    options = [f"[{'x' if rng.random() < 0.4 else ' '}] {tx.english_item(rng)}" for _ in range(rng.randint(3, 5))]
    y = b.flow([Block("list", "\n".join("- " + o for o in options), SANS.with_(size=10), text=options),
                _para(tx.english_paragraph(rng, (1, 2)), SANS.with_(size=9.5))], 60, w - 60, y + 6, h - 80) + 24
    if y < h - 70:
        b.text_line(f"Signature: {tx.person(rng)}    Date: {tx.date(rng)}", SANS.with_(size=10), 60, w - 60, y,
                    label="text")
        b.rule(120, 300, y + 12, 0.5)
    return b


def slide(rng) -> PageBuilder:
    w, h = SLIDE
    b = PageBuilder(w, h)
    color = rng.choice([(0.1, 0.2, 0.5), (0.5, 0.1, 0.1), (0.0, 0.0, 0.0), (0.1, 0.4, 0.2)])
    if rng.random() < 0.5:
        b.box((0, 0, w, 70), width=0, fill=(0.9, 0.92, 0.96))
    y = b.text_line(tx.english_heading(rng), Style("hebo", rng.choice([24.0, 28.0]), color=color), 40, w - 40, 22,
                    label="title", heading=1) + 20
    size = rng.choice([16.0, 18.0])
    bullets = [tx.english_item(rng) for _ in range(rng.randint(3, 5))]
    if rng.random() < 0.4:  # two columns of bullets
        more = [tx.english_item(rng) for _ in range(rng.randint(2, 4))]
        b.flow([_items(bullets, SANS.with_(size=size - 2))], 40, w / 2 - 10, y, h - 40)
        b.flow([_items(more, SANS.with_(size=size - 2))], w / 2 + 10, w - 40, y, h - 40)
    else:
        b.flow([_items(bullets, SANS.with_(size=size))], 40, w - 40, y, h - 40)
    b.text_line(f"{tx.place(rng)} \u00b7 {rng.randint(2, 40)}", Style("helv", 9.0, align="center"), 40, w - 40, h - 24)
    return b


def cjk(rng, language: str) -> PageBuilder:
    w, h = A4
    b = PageBuilder(w, h)
    para, heading = {"chinese": (tx.chinese_paragraph, tx.chinese_heading),
                     "japanese": (tx.japanese_paragraph, tx.japanese_heading),
                     "mixed": (tx.mixed_paragraph, tx.chinese_heading)}[language]
    body = Style("cjk", rng.choice([10.0, 10.5, 11.0]), leading=1.5)
    columns = rng.choice([1, 1, 2]) if language != "mixed" else 1
    _running(b, rng, heading(rng), Style("cjk", 8.0))
    y = b.text_line(heading(rng), Style("cjk", 18.0, align="center"), 60, w - 60, 56, label="title", heading=1)
    blocks = []
    for s in range(rng.randint(4, 5) * columns):
        number = "一二三四五六七八九十"[s] + "、" if language != "mixed" or rng.random() < 0.5 else f"{s + 1}. "
        blocks.append(_heading(rng, Style("cjk", body.size + 2.5), number + heading(rng)))
        blocks += [_para(para(rng), body) for _ in range(rng.randint(1, 3))]
    y = b.flow(blocks, 60, w - 60, y + 12, h - 70, columns=columns, gutter=18) + 10
    if language == "mixed" and y < h - 200:
        rows = tx.table_rows(rng, rng.randint(3, 5), 4)
        rows[0][0] = rng.choice(["项目", "地区", "指标"])
        b.table(rows, 60, y, body.with_(size=9.5), w - 120, ruled="grid", caption="表 1 " + heading(rng))
    return b


def fraktur(rng) -> PageBuilder:
    w, h = rng.choice([(500.0, 760.0), A4])
    b = PageBuilder(w, h)
    body = Style("fraktur", rng.choice([11.0, 12.0]), align="justify", leading=1.3)
    columns = rng.choice([1, 1, 2])
    m = 54
    b.text_line(str(rng.randint(2, 400)), Style("tiro", 9.0, align="center"), m, w - m, 26)
    y = b.text_line(tx.german_heading(rng), body.with_(size=22.0, align="center"), m, w - m, 50, label="title",
                    heading=1)
    b.rule(w / 2 - 60, w / 2 + 60, y + 4, 0.8)
    blocks = []
    for s in range(rng.randint(2, 3)):
        blocks.append(_heading(rng, body.with_(size=body.size + 3, align="center"), tx.german_heading(rng)))
        blocks += [_para(tx.german_paragraph(rng), body) for _ in range(rng.randint(1, 3))]
    b.flow(blocks, m, w - m, y + 14, h - 50, columns=columns, gutter=16, rules=columns == 2)
    return b


BUILDERS = {
    "article1": lambda rng: article(rng, 1), "article2": lambda rng: article(rng, 2),
    "article3": lambda rng: article(rng, 3), "newspaper": newspaper, "gazette": gazette, "report": report,
    "formula": formula, "form": form, "slide": slide, "chinese": lambda rng: cjk(rng, "chinese"),
    "japanese": lambda rng: cjk(rng, "japanese"), "mixed": lambda rng: cjk(rng, "mixed"), "fraktur": fraktur,
}


# --- the scan ---------------------------------------------------------------------------------------


def scan_parameters(rng: random.Random) -> dict:
    """How one page is scanned: resolution, skew, blur, noise, JPEG quality, uneven light."""
    return {"dpi": rng.choice([150, 200, 200, 240, 300]), "skew_degrees": round(rng.uniform(-1.5, 1.5), 2),
            "blur_radius": round(rng.uniform(0.3, 1.1), 2), "noise_sigma": round(rng.uniform(3, 12), 1),
            "jpeg_quality": rng.randint(45, 85), "light_drop": round(rng.uniform(0.05, 0.35), 2),
            "light_angle": round(rng.uniform(0, 6.283), 2), "noise_seed": rng.randint(0, 2**31 - 1)}


def scanned(pdf: bytes, params: dict) -> bytes:
    """An image-only PDF of ``pdf``'s page as a scanner with ``params`` would produce it."""
    import numpy as np
    import pymupdf
    from PIL import Image, ImageFilter

    with pymupdf.open("pdf", pdf) as doc:
        page = doc[0]
        pix = page.get_pixmap(dpi=params["dpi"], colorspace=pymupdf.csGRAY)
        size = page.rect
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    image = image.rotate(params["skew_degrees"], resample=Image.BICUBIC, fillcolor=255)
    image = image.filter(ImageFilter.GaussianBlur(params["blur_radius"] * params["dpi"] / 200))
    pixels = np.asarray(image, dtype=np.float32)
    hgt, wid = pixels.shape
    yy, xx = np.mgrid[0:hgt, 0:wid]
    import math
    ramp = (xx / wid - 0.5) * math.cos(params["light_angle"]) + (yy / hgt - 0.5) * math.sin(params["light_angle"])
    light = 1.0 - params["light_drop"] * (ramp + 0.5)  # paper brightness falls across the page
    noise = np.random.default_rng(params["noise_seed"]).normal(0.0, params["noise_sigma"], pixels.shape)
    pixels = np.clip(pixels * light + noise, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels, "L").save(buf, "JPEG", quality=params["jpeg_quality"])
    with pymupdf.open() as out:
        new = out.new_page(width=size.width, height=size.height)
        new.insert_image(new.rect, stream=buf.getvalue())
        return out.tobytes(garbage=3, deflate=True, no_new_id=True)


# --- the set ----------------------------------------------------------------------------------------


def page_name(kind: str, index: int) -> str:
    return f"{kind}_{index:03d}"


def make_page(kind: str, index: int, seed: int = DEFAULT_SEED) -> tuple[bytes, bytes, dict, str]:
    """(born-digital PDF, scanned PDF, layout record, reference Markdown) of one page."""
    rng = random.Random(f"{seed}:{kind}:{index}")
    born, fragments, reference = BUILDERS[kind](rng).finish()
    params = scan_parameters(rng)
    layout = {"name": page_name(kind, index), "kind": kind, "seed": seed, "scan": params,
              "regions": [f.__dict__ for f in fragments]}
    return born, scanned(born, params), layout, reference


def make_scan_set(out: Path, seed: int = DEFAULT_SEED, per_kind: int = PAGES_PER_KIND,
                  kinds: tuple[str, ...] = KINDS, log=None) -> list[str]:
    """Write the set into ``out`` (module docstring); returns the page names written."""
    out = Path(out)
    for sub in ("born/pairs", "scan/pairs", "layout"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    names = []
    for kind in kinds:
        for i in range(per_kind):
            name = page_name(kind, i)
            born, scan, layout, reference = make_page(kind, i, seed)
            for half, pdf in (("born", born), ("scan", scan)):
                (out / half / "pairs" / f"{name}.pdf").write_bytes(pdf)
                (out / half / "pairs" / f"{name}.md").write_text(reference, encoding="utf-8")
            (out / "layout" / f"{name}.json").write_text(json.dumps(layout, ensure_ascii=False, indent=1),
                                                         encoding="utf-8")
            names.append(name)
        if log:
            log(f"{kind}: {per_kind} pages")
    (out / "README.md").write_text(
        f"# Generated scan set (seed {seed})\n\nMade by `python -m tools.bench.scan_set --seed {seed}`: "
        f"{len(names)} pages of {len(kinds)} kinds. `born/` holds each page born-digital, `scan/` the same "
        "page scanned, each PDF with its reference Markdown; `layout/` the regions as laid out. Run `hsd bench` "
        "on `born` and `scan`, then `python -m tools.bench.scan_report`.\n", encoding="utf-8")
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.scan_set",
        description="write the generated scan set: pages of thirteen kinds, each born-digital (OUT/born) and "
        "scanned (OUT/scan) with its reference Markdown, and the regions as laid out (OUT/layout), from a seed")
    parser.add_argument("--out", required=True, help="folder to write")
    parser.add_argument("--seed", type=whole_number(0, 2**31 - 1, "--seed"), default=DEFAULT_SEED,
                        help=f"the seed every page follows from (default {DEFAULT_SEED})")
    parser.add_argument("--per-kind", type=whole_number(1, 1000, "--per-kind"), default=PAGES_PER_KIND,
                        help=f"pages of each kind (default {PAGES_PER_KIND})")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.kinds.split(",")) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds {', '.join(unknown)}; known: {', '.join(KINDS)}")
    names = make_scan_set(Path(args.out), args.seed, args.per_kind, tuple(args.kinds.split(",")), log=print)
    print(f"wrote {len(names)} pages to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
