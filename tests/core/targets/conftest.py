"""Loaded tiny targets and page images for the target-layer tests."""

from __future__ import annotations

import pytest


def page_image(lines: list[str], size=(280, 364)):
    """A white page with black text lines: enough structure for the vision tower to see something."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((12, 12 + 22 * i), line, fill="black")
    draw.rectangle((12, size[1] - 80, size[0] - 12, size[1] - 20), outline="black")
    return image


@pytest.fixture(scope="session")
def tiny_target(tiny_target_dir):
    """Factory: ``tiny_target(arch)`` -> a ``Target`` loaded from the tiny model folder (once per session)."""
    from core.targets.loader import load_target

    loaded: dict[str, object] = {}

    def get(arch: str):
        if arch not in loaded:
            loaded[arch] = load_target(str(tiny_target_dir(arch)), device="cpu")
        return loaded[arch]

    return get
