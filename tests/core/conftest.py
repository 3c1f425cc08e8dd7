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
