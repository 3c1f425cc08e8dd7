"""A dense newspaper page, generated: the page on which the engine's own cost per pass is largest.

Five columns of short stories on an A3 page, each story a headline and one to three short
paragraphs: about 330 regions from the text layer and 2 200 tokens (Qwen's BPE) on one page. The
text is made of common English words in a fixed pseudo-random order (``seed``), so the page is the
same on every machine and owes nothing to any document.

    python -m tools.bench.newspaper OUT      # OUT/pairs/newspaper.pdf + newspaper.md

The reference (``newspaper.md``) is the stories in reading order, column by column: headlines as
``## `` headings, paragraphs as they are typeset.
"""

from __future__ import annotations

import random
from pathlib import Path

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
         "they you were her she there one all we their been has would when more if no out so said what up its "
         "about into than them can only other time new some could these two may first then do any like my now "
         "over such our man me even most made after also did many before must through back years where much your "
         "way well down should because each just those people how too little state good very make world still "
         "own see men work long get here between both life being under never day same another know while last "
         "might us great old year off come since against go came right used take three city council market "
         "river bridge school harbour railway station mayor report week morning evening local trade price "
         "water road farm street church museum garden league match season players weather storm rain").split()

PAGE_WIDTH, PAGE_HEIGHT = 842, 1191   # A3 portrait, points
MARGIN, GUTTER, COLUMNS = 36, 24, 5
BODY_SIZE, HEAD_SIZE = 7.5, 9.5


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
    return " ".join(words).capitalize() + "."


def stories(seed: int = 0, count: int = 120) -> list[tuple[str, list[str]]]:
    """``count`` stories ``(headline, paragraphs)``, the same for the same ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        headline = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))).title()
        paragraphs = [" ".join(_sentence(rng) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
        out.append((headline, paragraphs))
    return out


def write_newspaper(folder: str | Path, seed: int = 0) -> Path:
    """Write ``folder/pairs/newspaper.pdf`` and its reference ``newspaper.md``; returns the corpus
    folder. Stories fill the columns in order until the page is full."""
    import pymupdf

    pairs = Path(folder) / "pairs"
    pairs.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
    width = (PAGE_WIDTH - 2 * MARGIN - (COLUMNS - 1) * GUTTER) / COLUMNS
    column, y = 0, MARGIN
    written: list[str] = []
    for headline, paragraphs in stories(seed):
        blocks = [(headline, HEAD_SIZE, "hebo")] + [(p, BODY_SIZE, "helv") for p in paragraphs]
        need = sum(_height(t, size, width, font) + 4 for t, size, font in blocks)
        if y + need > PAGE_HEIGHT - MARGIN:
            column, y = column + 1, MARGIN
            if column == COLUMNS:
                break
        x = MARGIN + column * (width + GUTTER)
        for text, size, font in blocks:
            height = _height(text, size, width, font)
            rect = pymupdf.Rect(x, y, x + width, y + height)
            if page.insert_textbox(rect, text, fontsize=size, fontname=font) < 0:
                raise RuntimeError("a block did not fit its box")  # _height is meant to be generous
            y += height + 4
        y += 6
        written += [f"## {headline}"] + paragraphs
    doc.save(str(pairs / "newspaper.pdf"))
    (pairs / "newspaper.md").write_text("\n\n".join(written) + "\n", encoding="utf-8")
    doc.close()
    return Path(folder)


def _height(text: str, size: float, width: float, font: str) -> float:
    """A box tall enough for ``text`` at ``size`` in ``width`` points: its words wrapped as
    ``insert_textbox`` wraps them (measured in the font), with a little slack."""
    import pymupdf

    space = pymupdf.get_text_length(" ", fontname=font, fontsize=size)
    lines, used = 1, 0.0
    for word in text.split():
        w = pymupdf.get_text_length(word, fontname=font, fontsize=size)
        if used and used + space + w > width * 0.97:
            lines, used = lines + 1, w
        else:
            used += (space if used else 0.0) + w
    return lines * size * 1.3 + size * 0.8


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m tools.bench.newspaper", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="corpus folder to write (pairs/newspaper.pdf and .md)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    write_newspaper(a.out, a.seed)
    print(f"{a.out}/pairs/newspaper.pdf")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
