"""A model folder is untrusted input: a tokenizer file of a gigabyte or a chat template that loops
without end is refused in one line, before it can take the memory it asks for."""

from __future__ import annotations

import os
import shutil

import pytest

from core import tuning
from tests.reliability import hostile as h
from tests.reliability.conftest import FAST, assert_clear_error


@pytest.fixture
def model_copy(model_dir, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    return folder


def _sparse(path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)  # a hole: no disk, no memory unless someone reads it


def test_a_gigabyte_tokenizer_file_is_refused_from_its_size(model_copy):
    """A 1 GB sparse tokenizer.json (reading it took 5.7 GB) is refused by the folder check, which
    reads no more than the file's size."""
    from core.errors import ModelLoadError
    from core.targets.loader import check_model_folder

    _sparse(model_copy / "tokenizer.json", 1 << 30)
    with pytest.raises(ModelLoadError, match=r"tokenizer\.json is 1,024 MiB"):
        check_model_folder(str(model_copy))


def test_convert_with_an_oversized_tokenizer_file_says_so_in_one_line(cli, model_copy, tmp_path, monkeypatch):
    """Through ``hsd convert``, with the limit lowered so that a failing check costs nothing."""
    monkeypatch.setattr(tuning, "MAX_TOKENIZER_FILE_BYTES", 1 << 20)
    _sparse(model_copy / "tokenizer.json", 2 << 20)
    pdf = h.text_pdf(tmp_path / "in.pdf", pages=1)
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "out.md", "--model", model_copy, *FAST)
    assert_clear_error(rc, err, "tokenizer.json", "larger than any real one")
    assert not (tmp_path / "out.md").exists()


def test_convert_with_a_chat_template_that_loops_without_end_says_so_in_one_line(cli, model_copy, tmp_path):
    """Nested ``range(100000)`` loops took 5 GB. These loops write nothing (so that a failing check
    costs seconds, not memory) and take 9,000,000 steps: past the bound, refused at load."""
    template = (model_copy / "chat_template.jinja").read_text()
    loops = "{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}"
    (model_copy / "chat_template.jinja").write_text(loops + template)
    pdf = h.text_pdf(tmp_path / "in.pdf", pages=1)
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "out.md", "--model", model_copy, *FAST)
    assert_clear_error(rc, err, "chat template runs without bound")
    assert not (tmp_path / "out.md").exists()


def test_a_chat_template_that_writes_without_end_is_refused():
    from core.targets.bounded_files import TemplateRunsWithoutBound, render_bounded

    for template in ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
                     "{{ 'x' * 100000000 }}", "{{ messages * 100000000 }}", "{{ 10 ** 100000000 }}",
                     "{% for i in range(10) %}{{ 'y' * 900000 }}{% endfor %}"):
        with pytest.raises(TemplateRunsWithoutBound):
            render_bounded(template, {"messages": [{"role": "user"}]})


def test_real_chat_templates_render_as_transformers_renders_them(tiny_target, model_dir):
    """The bounded sandbox reads the families' templates as transformers does (same prompt)."""
    from core.targets.bounded_files import render_bounded

    target = tiny_target("qwen2_5_vl")
    processor, profile = target.processor, target.profile
    for prompt in (profile.prompt("page"), profile.prompt("region", "table")):
        messages = profile.messages(prompt)
        expected = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        special = {k: v for k, v in processor.tokenizer.special_tokens_map.items() if isinstance(v, str)}
        rendered = render_bounded(processor.chat_template, dict(special, messages=messages, add_generation_prompt=True))
        assert rendered == expected
    assert os.path.getsize(os.path.join(model_dir, "chat_template.jinja")) < tuning.MAX_MODEL_SMALL_FILE_BYTES
