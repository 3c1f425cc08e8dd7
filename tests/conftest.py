"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_target_dir(tmp_path_factory):
    """Factory: ``tiny_target_dir(arch)`` -> folder of a tiny random model of that family (built once per session).

    The folder loads with ``core.targets.load_target`` exactly like a hub model.
    """
    from core.targets.tiny import build_tiny_model

    built: dict[str, object] = {}

    def get(arch: str):
        if arch not in built:
            built[arch] = build_tiny_model(tmp_path_factory.mktemp(f"tiny-{arch}"), arch, seed=0)
        return built[arch]

    return get
