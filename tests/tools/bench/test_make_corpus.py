"""``python -m tools.bench.make_corpus``: Markdown -> typeset PDF + reference, in the layout ``hsd bench`` reads."""

import json

import pytest

pytest.importorskip("markdown_it")

from core.bench.corpus import load_corpus  # noqa: E402
from core.cli import main as hsd  # noqa: E402
from core.documents import open_document  # noqa: E402
from tools.bench.make_corpus import (CorpusSourceError, main, make_corpus, markdown_document,  # noqa: E402
                                     source_markdown, source_name)

SOURCE = """# Field Guide [![build](https://ci.example/badge.svg)](https://ci.example)

<p align="center">raw html is not typeset</p>

Moths are **nocturnal** insects; see the [survey](https://example.org) for *counts* and `code`.
**![logo](logo.png)**

- first item
- second item
  - nested item

5. fifth
6. sixth

| species | wingspan |
|---|---|
| Luna moth | 11 cm |
| Atlas moth | 25 cm |

```python
print("moths")  # """ + "wing " * 30 + """
```

---

> A quoted remark about lanterns.
"""


def test_reference_is_what_is_typeset():
    doc = markdown_document("guide", SOURCE)
    head, code, tail = doc.reference.split("```")
    assert head == (
        "# Field Guide\n\n"
        "Moths are **nocturnal** insects; see the survey for *counts* and `code`.\n\n"
        "- first item\n- second item\n  - nested item\n\n"
        "5. fifth\n6. sixth\n\n"
        "| species | wingspan |\n|---|---|\n| Luna moth | 11 cm |\n| Atlas moth | 25 cm |\n\n")
    assert tail == "\n\nA quoted remark about lanterns.\n"
    # A code line wider than the page wraps (a <pre> line would be clipped), in both HTML and reference.
    lines = code.strip("\n").split("\n")
    assert len(lines) == 3 and all(len(line) <= 80 for line in lines)
    assert "".join(lines) == 'print("moths")  # ' + ("wing " * 30).rstrip()
    assert "\n".join(lines) in doc.html.replace("&quot;", '"')
    # Raw HTML and images never reach the HTML either (Story would typeset or fetch them).
    assert "raw html" not in doc.html and "<img" not in doc.html and "logo.png" not in doc.html


def test_long_sources_are_cut_at_a_block_boundary():
    paragraphs = [f"Paragraph {i} " + "text " * 40 for i in range(50)]
    doc = markdown_document("long", "\n\n".join(paragraphs), max_chars=1000)
    blocks = doc.reference.strip().split("\n\n")
    assert 1000 <= len(doc.reference) < 1000 + 300
    assert blocks == [p.strip() for p in paragraphs[:len(blocks)]]


def test_sources_and_names(tmp_path):
    meta = tmp_path / "moth_kit-1.2.dist-info" / "METADATA"
    meta.parent.mkdir()
    meta.write_text("Metadata-Version: 2.1\nName: moth_kit\nDescription-Content-Type: text/markdown\n\n# Moth kit\n")
    assert source_markdown(meta) == "# Moth kit\n"
    assert source_name(meta) == "moth-kit"  # the distribution name up to its version, no underscore
    rst = tmp_path / "rst.dist-info" / "METADATA"
    rst.parent.mkdir()
    rst.write_text("Metadata-Version: 2.1\nDescription-Content-Type: text/x-rst\n\nTitle\n=====\n")
    with pytest.raises(CorpusSourceError, match="not Markdown"):
        source_markdown(rst)
    assert source_name(tmp_path / "User_Guide v2.md") == "User-Guide-v2"
    empty = tmp_path / "empty.md"
    empty.write_text("![only an image](x.png)\n")
    with pytest.raises(CorpusSourceError, match="nothing in it"):
        make_corpus([empty], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written for a bad source


def test_corpus_loads_and_its_text_layer_holds_the_reference(tmp_path):
    src = tmp_path / "guide.md"
    src.write_text(SOURCE, encoding="utf-8")
    stems = make_corpus([src], tmp_path / "corpus", scans=True, scan_dpi=100)
    assert stems == ["born_guide", "scan_guide"]
    docs = {d.name: d for d in load_corpus(tmp_path / "corpus")}
    assert set(docs) == {"born_guide", "scan_guide"} and docs["born_guide"].kind == "born"
    assert docs["scan_guide"].kind == "scan" and docs["born_guide"].reference == docs["scan_guide"].reference
    with open_document(docs["born_guide"].pdf) as pdf:
        text = " ".join(page.fitz_page.get_text() for page in pdf.pages())
    for words in ("Field Guide", "nocturnal", "Atlas moth", "nested item", "lanterns"):
        assert words in text
    with open_document(docs["scan_guide"].pdf) as pdf:
        page = next(iter(pdf.pages()))
        assert not page.fitz_page.get_text().strip() and page.fitz_page.get_images()


def test_cli_makes_a_corpus_that_hsd_bench_runs(tmp_path, capsys):
    src = tmp_path / "guide.md"
    src.write_text(SOURCE, encoding="utf-8")
    assert main([str(src), "--out", str(tmp_path / "c")]) == 0
    assert "wrote 1 documents" in capsys.readouterr().out
    out = tmp_path / "bench"
    assert hsd(["bench", str(tmp_path / "c"), "--drafter", "textlayer", "--tokenizer", "tiny",
                 "--methods", "ar,hsd", "--out", str(out), "-q"]) == 0
    pages = json.loads((out / "bench.json").read_text())["pages"]
    assert pages and all(p["methods"]["hsd"]["forward_passes"] < p["methods"]["ar"]["forward_passes"] for p in pages)
    assert main([str(tmp_path / "missing.md"), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(SystemExit):  # no SOURCE: argparse's usage error
        main(["--out", str(tmp_path / "e")])


def test_characters_the_text_layer_cannot_give_back_become_question_marks(tmp_path):
    src = tmp_path / "boxes.md"
    src.write_text("# Boxes\n\nLight ╭──╮ and heavy ┏━━┓ corners.\n", encoding="utf-8")
    make_corpus([src], tmp_path / "c")
    reference = (tmp_path / "c" / "pairs" / "born_boxes.md").read_text(encoding="utf-8")
    with open_document(tmp_path / "c" / "pairs" / "born_boxes.pdf") as pdf:
        text = next(iter(pdf.pages())).fitz_page.get_text()
    assert "\ufffd" not in text and "\x00" not in text and "Light" in reference and "corners" in reference
    assert "?" in reference  # at least the heavy corners had no Unicode map
    for char in set(reference):
        assert char.isascii() or char in text  # every symbol of the reference is on the text layer
