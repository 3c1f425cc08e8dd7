"""The generated newspaper page the engine's own cost is measured on (``tools.bench.newspaper``)."""

from tools.bench.newspaper import main, stories, write_newspaper


def test_the_page_is_dense_and_the_same_every_time(tmp_path):
    from core.documents import open_document
    from core.drafters import get_drafter

    folder = write_newspaper(tmp_path / "a")
    md = (folder / "pairs" / "newspaper.md").read_text(encoding="utf-8")
    assert md == (write_newspaper(tmp_path / "b") / "pairs" / "newspaper.md").read_text(encoding="utf-8")
    assert md != (write_newspaper(tmp_path / "c", seed=1) / "pairs" / "newspaper.md").read_text(encoding="utf-8")
    assert md.count("\n## ") >= 40 and len(md.split()) > 1500
    with open_document(folder / "pairs" / "newspaper.pdf") as doc:
        assert doc.page_count == 1
        regions = get_drafter("textlayer").draft(doc.page(0))
    assert len(regions) > 130  # every headline and paragraph of five columns (137 blocks)


def test_stories_are_headlines_over_short_paragraphs():
    headline, paragraphs = stories(seed=3, count=1)[0]
    assert headline.istitle() and 1 <= len(paragraphs) <= 3 and all(p.endswith(".") for p in paragraphs)


def test_the_command_writes_a_corpus_folder(tmp_path, capsys):
    assert main([str(tmp_path)]) == 0
    assert (tmp_path / "pairs" / "newspaper.pdf").exists() and "newspaper.pdf" in capsys.readouterr().out
