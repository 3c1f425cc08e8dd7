"""Shared fixtures: the corpus location (skipped when absent) and generated documents."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path | None:
    """``$HSD_CORPUS`` or ``../shared/corpus`` beside the repository; None when neither exists."""
    candidates = [os.environ.get("HSD_CORPUS"), REPO_ROOT / ".." / "shared" / "corpus"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "pairs").is_dir():
            return Path(candidate).resolve()
    return None


@pytest.fixture(scope="session")
def corpus() -> Path:
    found = corpus_dir()
    if found is None:
        pytest.skip("corpus not found (set HSD_CORPUS or put it at ../shared/corpus)")
    return found


@pytest.fixture(scope="session")
def report_pdf(tmp_path_factory) -> Path:
    from tests.core.pdf_factory import report_pdf
    return report_pdf(tmp_path_factory.mktemp("docs") / "report.pdf", pages=2)


@pytest.fixture(scope="session")
def lined_page_ar(tiny_target):
    """Factory: ``lined_page_ar(arch, regions, max_new_tokens, size)`` -> ``(target, image, result)``:
    the tiny model of ``arch``, the lined test page (``tests.core.lined_page``) and its ``ar``
    conversion with the drafter ``regions`` on a page of ``size`` (width, height) points: the
    reference a losslessness test compares ``hsd`` with. Converted once per session for each arch,
    layout, limit and size (tests read the result, never change it)."""
    from core.engine import Engine, EngineConfig
    from tests.core.lined_page import lined_page_image

    converted: dict = {}

    def convert(arch: str, regions, max_new_tokens: int, size: tuple[float, float]):
        key = (arch, tuple(map(repr, regions)), max_new_tokens, size)
        if key not in converted:
            target, image = tiny_target(arch), lined_page_image()
            engine = Engine(EngineConfig(mode="ar", max_new_tokens=max_new_tokens), target=target)
            converted[key] = target, image, engine.convert_image(image, list(regions), *size)
        return converted[key]

    return convert
