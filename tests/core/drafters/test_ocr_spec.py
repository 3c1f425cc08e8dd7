"""The OCR drafter's workers and device in its spec: written by ``drafter_spec``, read back by
``parse_drafter_spec``, and handed by ``get_drafter`` (through the auto drafter) to the OCR drafter's
constructor."""

import pytest

import core.drafters
from core.drafters import drafter_spec, get_drafter, parse_drafter_spec
from core.errors import HSDError


def test_the_spec_round_trips_typed():
    spec = drafter_spec("auto", "pymupdf", 2, "cpu")
    assert spec == "auto:layout=pymupdf,workers=2,device=cpu"
    assert parse_drafter_spec(spec) == ("auto", {"layout": "pymupdf", "workers": 2, "device": "cpu"})


def test_defaults_are_left_out():
    assert drafter_spec("rapidocr", "cdla", None, "auto") == "rapidocr:layout=cdla"
    assert drafter_spec("textlayer", None, None, None) == "textlayer"
    assert drafter_spec("textlayer", None, None, "auto") == "textlayer"


@pytest.mark.parametrize("workers, device, said", [
    (0, None, "at least 1"), (-2, None, "at least 1"), (True, None, "at least 1"), ("2", None, "at least 1"),
    (None, "gpu", "unknown OCR device 'gpu'; choose one of: auto, cpu"),
])
def test_bad_values_are_one_clear_error(workers, device, said):
    with pytest.raises(HSDError, match=said):
        drafter_spec("auto", None, workers, device)


class ConstructorCall:
    """Stands in for ``RapidOCRDrafter``'s constructor: what the spec hands it."""

    def __init__(self, **options):
        self.options = options


@pytest.mark.parametrize("name", ["auto", "rapidocr"])
def test_the_ocr_drafter_is_built_with_them(name, monkeypatch):
    import core.drafters.rapidocr as rapidocr

    monkeypatch.setattr(rapidocr, "RapidOCRDrafter", ConstructorCall)
    if name == "rapidocr":
        monkeypatch.setitem(core.drafters._DRAFTERS, "rapidocr", (__name__, "ConstructorCall"))
    drafter = get_drafter(drafter_spec(name, "pymupdf", 3, "cpu"))
    ocr = drafter.choose_ocr() if name == "auto" else drafter
    assert ocr.options["workers"] == 3 and ocr.options["device"] == "cpu" and ocr.options["layout"] == "pymupdf"
    assert drafter.spec == f"{name}:layout=pymupdf,workers=3,device=cpu"  # what a drafting process builds from


def test_the_real_ocr_drafter_takes_them():
    drafter = get_drafter(drafter_spec("auto", "pymupdf", 2, "cpu")).choose_ocr()
    assert type(drafter).__name__ == "RapidOCRDrafter"
    assert (drafter.workers, drafter.device) == (2, "cpu")
