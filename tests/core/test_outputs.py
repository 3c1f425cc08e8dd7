"""Output naming: unique by construction, the input tree mirrored, names that fit and links that
stay plain Markdown."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

import pytest

from core.errors import HSDError
from core.export import figure_link, fit_name, images_dir_for, work_dir_for
from core.outputs import output_paths


def test_one_input_and_a_md_name_is_that_file(tmp_path):
    assert output_paths([tmp_path / "a.pdf"], tmp_path / "x.md") == [tmp_path / "x.md"]


def test_the_input_tree_is_mirrored_below_the_common_parent(tmp_path):
    c = tmp_path / "c"
    got = output_paths([c / "x.pdf", c / "x-2.pdf", c / "sub" / "x.pdf"], tmp_path / "out")
    assert got == [tmp_path / "out" / "x.md", tmp_path / "out" / "x-2.md", tmp_path / "out" / "sub" / "x.md"]


def test_stems_that_clash_keep_the_whole_name_until_nothing_clashes(tmp_path):
    names = ["x.pdf", "x.png", "x.pdf.png", "y.pdf"]
    got = [p.name for p in output_paths([tmp_path / n for n in names], tmp_path / "out")]
    assert got == ["x.pdf.md", "x.png.md", "x.pdf.png.md", "y.md"]
    assert len(set(got)) == len(got)


def test_an_existing_file_or_folder_in_the_wrong_role_is_refused(tmp_path):
    (tmp_path / "dir.md").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(HSDError, match="is a folder"):
        output_paths([tmp_path / "a.pdf"], tmp_path / "dir.md")
    with pytest.raises(HSDError, match="does not end in .md") as one:
        output_paths([tmp_path / "a.pdf"], tmp_path / "notes.txt")
    assert "several" not in str(one.value)
    with pytest.raises(HSDError, match="with 2 inputs"):
        output_paths([tmp_path / "a.pdf", tmp_path / "b.pdf"], tmp_path / "notes.txt")


def test_long_names_fit_and_stay_distinct():
    a, b = "n" * 300 + "a", "n" * 300 + "b"
    assert len(os.fsencode(fit_name(a, ".md"))) <= 255 and fit_name(a, ".md") != fit_name(b, ".md")
    assert fit_name("short", ".md") == "short.md"
    md = Path("/out") / ("é" * 126 + ".md")  # 252 bytes + 3
    for derived in (images_dir_for(md), work_dir_for(md)):
        assert len(os.fsencode(derived.name)) <= 255


def test_figure_folders_of_odd_names_are_linked_plainly():
    for stem in ["x<img src=x onerror=alert(1)>", "my doc (1)", "new\nline", os.fsdecode(b"r\xe9sum\xe9")]:
        folder = images_dir_for(Path("/out") / f"{stem}.md")
        assert "\n" not in folder.name and "\udce9" not in folder.name
        link = figure_link(folder.name, 1, 0)
        assert not set(link) & set("<>() \n[]\"'")
        assert unquote(link) == f"{folder.name}/page-0001-figure-01.png"
    assert images_dir_for(Path("/out/doc.md")).name == "doc_images"


def test_names_are_compared_as_case_and_normalisation_insensitive_file_systems_do():
    import unicodedata

    from core.outputs import comparable_name

    assert comparable_name("Scan.PDF") == comparable_name("scan.pdf")
    assert comparable_name(unicodedata.normalize("NFC", "Résumé")) == comparable_name(unicodedata.normalize("NFD", "résumé"))
    assert comparable_name("a.pdf") != comparable_name("b.pdf")


def test_a_whole_name_outranks_a_stem_and_a_hash_settles_the_rest(tmp_path):
    got = [p.name for p in output_paths([tmp_path / n for n in ["Scan.PDF", "scan.png", "X.pdf", "x.pdf", "y.pdf"]],
                                        tmp_path / "out")]
    assert got[:2] == ["Scan.PDF.md", "scan.png.md"] and got[4] == "y.md"
    assert got[2].startswith("X.pdf-") and got[3].startswith("x.pdf-") and got[2].lower() != got[3].lower()
