"""One profile per target family, keyed by ``config.model_type``."""

from __future__ import annotations

import importlib

from core.targets.profiles.base import Profile

#: ``config.model_type`` -> module under this package that defines ``PROFILE``.
FAMILY_MODULES = {
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "hunyuan_vl": "hunyuan_vl",
    "paddleocr_vl": "paddleocr_vl",
    "glm_ocr": "glm_ocr",
}


def get_profile(model_type: str) -> Profile:
    """The profile of a family; ``KeyError`` if the family is not supported."""
    module = importlib.import_module(f"core.targets.profiles.{FAMILY_MODULES[model_type]}")
    return module.PROFILE


__all__ = ["FAMILY_MODULES", "Profile", "get_profile"]
