"""Where the real checkpoints' metadata is: ``$HSD_REALMODEL`` or ``../shared/realmodel`` beside the
repository (third-party files, never part of the project); tests that need it skip without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


def realmodel_dir() -> Path | None:
    for candidate in (os.environ.get("HSD_REALMODEL"), REPO_ROOT / ".." / "shared" / "realmodel"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def real_file(family: str, name: str) -> Path:
    """A real metadata file, or skip the test."""
    root = realmodel_dir()
    path = root / family / name if root else None
    if path is None or not path.is_file():
        pytest.skip(f"real metadata {family}/{name} not found (set HSD_REALMODEL or put it at ../shared/realmodel)")
    return path
