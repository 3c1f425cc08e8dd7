"""core.drafters.parse_drafter_spec: a drafter and its options named in one string (CLI, Ray, bench)."""

import pytest

from core.drafters import get_drafter, parse_drafter_spec
from core.errors import DrafterUnavailableError


def test_plain_name_has_no_options():
    assert parse_drafter_spec("auto") == ("auto", {})


def test_options_are_typed():
    assert parse_drafter_spec("rapidocr:layout=pymupdf,tables=false,dpi=200") == (
        "rapidocr", {"layout": "pymupdf", "tables": False, "dpi": 200})


def test_option_without_value_is_refused():
    with pytest.raises(DrafterUnavailableError):
        parse_drafter_spec("auto:layout")


def test_get_drafter_takes_a_spec():
    drafter = get_drafter("rapidocr:layout=pymupdf,tables=false")
    assert drafter.layout == "pymupdf" and drafter.tables is False
    with pytest.raises(DrafterUnavailableError):
        get_drafter("nonsense:layout=pymupdf")
