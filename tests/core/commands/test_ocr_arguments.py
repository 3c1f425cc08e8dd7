"""``--ocr-workers`` and ``--ocr-device`` reach the OCR drafter through its spec (``drafter_spec``), on
``hsd convert`` (and ``--ray``: the same configuration) and ``hsd draft``."""

import pytest

from core import tuning
from core.api import engine_config
from core.cli import build_parser
from core.errors import HSDError


def _convert(*argv):
    return build_parser().parse_args(["convert", "in.pdf", "-o", "out.md", *argv])


def test_the_defaults_leave_the_spec_as_it_was():
    args = _convert()
    assert (args.ocr_workers, args.ocr_device) == (None, "auto")
    assert engine_config(args).drafter == f"auto:layout={tuning.DEFAULT_SCAN_LAYOUT}"
    assert engine_config(_convert("--ocr-device", "auto")).drafter == f"auto:layout={tuning.DEFAULT_SCAN_LAYOUT}"


def test_workers_and_device_are_named_in_the_ocr_drafter_s_spec():
    layout = tuning.DEFAULT_SCAN_LAYOUT
    assert engine_config(_convert("--ocr-workers", "2")).drafter == f"auto:layout={layout},workers=2"
    assert engine_config(_convert("--ocr-device", "cpu")).drafter == f"auto:layout={layout},device=cpu"
    assert engine_config(_convert("--drafter", "rapidocr", "--scan-layout", "cdla", "--ocr-workers", "3",
                                  "--ocr-device", "cpu")).drafter == "rapidocr:layout=cdla,workers=3,device=cpu"


@pytest.mark.parametrize("argv, said", [
    (("--ocr-workers", "0"), "--ocr-workers must be between 1 and 256, got 0"),
    (("--ocr-workers", "two"), "expected a whole number, got 'two'"),
    (("--ocr-device", "cuda"), "invalid choice: 'cuda'"),
])
def test_a_bad_value_is_one_line_before_anything_loads(argv, said, capsys):
    with pytest.raises(SystemExit):
        _convert(*argv)
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("argv", [("--ocr-workers", "2"), ("--ocr-device", "cpu")])
def test_a_drafter_without_ocr_refuses_them(argv):
    with pytest.raises(HSDError, match="apply to the OCR drafters"):
        engine_config(_convert("--drafter", "textlayer", *argv))


def test_hsd_draft_takes_them_too():
    args = build_parser().parse_args(["draft", "in.pdf", "--ocr-workers", "4", "--ocr-device", "cpu"])
    assert (args.ocr_workers, args.ocr_device) == (4, "cpu")
