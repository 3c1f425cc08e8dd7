"""resources/sample.pdf: small, born-digital, and what its generator makes."""

from __future__ import annotations

import importlib.util

from core.documents import open_document
from core.drafters.normalize import normalize_for_match
from tests.core.conftest import REPO_ROOT

SAMPLE = REPO_ROOT / "resources" / "sample.pdf"


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_sample", REPO_ROOT / "resources" / "make_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(path) -> str:
    with open_document(path) as doc:
        return normalize_for_match("".join(p.fitz_page.get_text() for p in doc.pages()))


def test_sample_is_small_born_digital_and_two_pages():
    assert SAMPLE.stat().st_size < 100_000
    with open_document(SAMPLE) as doc:
        assert doc.page_count == 2
        assert all(page.is_born_digital for page in doc.pages())


def test_committed_sample_matches_its_generator(tmp_path):
    _load_generator().build(tmp_path / "sample.pdf")
    assert _text(tmp_path / "sample.pdf") == _text(SAMPLE)
