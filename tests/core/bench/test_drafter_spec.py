"""core.bench.runner.drafter_spec: a drafter variant named on the command line."""

import pytest

from core.bench.runner import drafter_spec


def test_plain_name_has_no_options():
    assert drafter_spec("auto") == ("auto", {})


def test_options_are_typed():
    assert drafter_spec("rapidocr:layout=pymupdf,tables=false,dpi=200") == (
        "rapidocr", {"layout": "pymupdf", "tables": False, "dpi": 200})


def test_option_without_value_is_refused():
    with pytest.raises(ValueError):
        drafter_spec("auto:layout")
