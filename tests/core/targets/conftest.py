"""Page images for the target-layer tests (the loaded tiny targets: ``tiny_target`` in tests/conftest.py)."""

from __future__ import annotations


def page_image(lines: list[str], size=(280, 364)):
    """A white page with black text lines: enough structure for the vision tower to see something."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((12, 12 + 22 * i), line, fill="black")
    draw.rectangle((12, size[1] - 80, size[0] - 12, size[1] - 20), outline="black")
    return image
