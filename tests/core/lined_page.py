"""The page image the engine tests convert: ten printed lines on white, so the vision tower sees text."""

from __future__ import annotations

from PIL import Image, ImageDraw


def lined_page_image() -> Image.Image:
    img = Image.new("RGB", (400, 520), "white")
    draw = ImageDraw.Draw(img)
    for i in range(10):
        draw.text((20, 20 + 45 * i), f"Line {i}: speculative decoding of a test page", fill="black")
    return img
