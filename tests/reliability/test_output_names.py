"""Document names in figure folders and links: a name with HTML, spaces, parentheses, a newline or
bytes that are not UTF-8 gives links that are plain Markdown (never HTML) and always resolve.

``hsd`` runs in this process (``cli``); the text-layer drafter also reports one figure per page
(``with_a_figure``), as a layout drafter would for a picture, so every page has a figure to crop
and link.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR


@pytest.fixture
def with_a_figure(monkeypatch):
    from core.drafters import textlayer
    from core.drafters.base import Region

    draft = textlayer.TextLayerDrafter.draft
    monkeypatch.setattr(textlayer.TextLayerDrafter, "draft", lambda self, page: draft(self, page) + [
        Region("figure", (40.0, 240.0, 380.0, 440.0), "", "textlayer")])

NAMES = ["x<img src=http:127.0.0.1:8765 onerror=alert(1)>", "my doc (1)", "new\nline", "tab\there [a](b)"]
_LINK = re.compile(r"!\[[^\]\n]*\]\(([^()\s]*)\)")


def _figure_links(markdown: str) -> list[str]:
    return _LINK.findall(markdown)


def _check(md: Path) -> None:
    text = md.read_bytes().decode("utf-8")  # valid UTF-8, no \udcXX escapes
    assert "\\udc" not in text and "<img" not in text.lower(), text
    links = _figure_links(text)
    assert links, text
    assert text.count("](") == len(links), text  # every link parses as a plain Markdown image
    for link in links:
        target = Path(os.fsdecode(os.fsencode(md.parent) + b"/" + unquote_to_bytes(link)))
        assert target.is_file(), (md, link)
        assert target.parent.parent == md.parent


def test_figure_links_of_hostile_names_are_plain_and_resolve(tmp_path, cli, model_dir, with_a_figure):
    inputs = [h.text_pdf(tmp_path / f"{name}.pdf", pages=2) for name in NAMES]
    inputs.append(h.non_utf8_name(tmp_path))
    out = tmp_path / "out"
    rc, _, err = cli("convert", *inputs, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    written = sorted(out.glob("*.md"))
    assert len(written) == len(inputs), written
    for md in written:
        _check(md)


def test_a_hostile_output_name_gets_a_plain_figure_folder(tmp_path, cli, model_dir, with_a_figure):
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    md = tmp_path / "x<img src=x onerror=alert(1)> (copy).md"
    rc, _, err = cli("convert", pdf, "-o", md, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    _check(md)
