"""Drafters: turn a page into regions with draft text (see ``base.Drafter``).

``get_drafter(name, **options)`` builds one by name; modules load lazily so that, e.g., the text-layer
drafter never imports the OCR stack.
"""

from __future__ import annotations

import importlib

from core.drafters.base import REGION_LABELS, Drafter, Region
from core.errors import DrafterUnavailableError

#: name -> (module, class); ``auto`` is the default.
_DRAFTERS = {
    "auto": ("core.drafters.auto", "AutoDrafter"),
    "textlayer": ("core.drafters.textlayer", "TextLayerDrafter"),
    "rapidocr": ("core.drafters.rapidocr", "RapidOCRDrafter"),
    "paddle": ("core.drafters.paddle", "PaddleDrafter"),
}
DRAFTER_NAMES = tuple(_DRAFTERS)
DEFAULT_DRAFTER = "auto"


def get_drafter(name: str = DEFAULT_DRAFTER, **options) -> Drafter:
    """A new drafter instance; unknown names raise DrafterUnavailableError listing the known ones."""
    if name not in _DRAFTERS:
        raise DrafterUnavailableError(f"unknown drafter {name!r}; choose one of: {', '.join(DRAFTER_NAMES)}")
    module_name, class_name = _DRAFTERS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(**options)


__all__ = ["DRAFTER_NAMES", "DEFAULT_DRAFTER", "REGION_LABELS", "Drafter", "Region", "get_drafter"]
