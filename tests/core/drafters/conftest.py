"""Fixtures of the drafters' tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_shared_readers():
    """The test ends without the drafting processes it shared (``core.drafters.process.reader_for``):
    the next test starts its own."""
    yield
    from core.drafters import process

    for reader in process._shared.values():
        reader.close()
    process._shared.clear()
