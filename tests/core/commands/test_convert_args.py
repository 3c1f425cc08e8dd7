"""``hsd convert``'s options reach the engine's configuration."""

import pytest

from core import tuning
from core.api import engine_config
from core.cli import build_parser
from core.drafters import SCAN_LAYOUTS


def _parse(*argv):
    return build_parser().parse_args(["convert", "in.pdf", "-o", "out.md", *argv])


def test_stage1_skip_names_drafters():
    assert engine_config(_parse()).stage1_skip_sources == ()
    config = engine_config(_parse("--stage1-skip", "textlayer, rapidocr"))
    assert config.stage1_skip_sources == ("textlayer", "rapidocr")


@pytest.mark.parametrize("value", ["textlyer", "auto"])
def test_stage1_skip_rejects_what_is_no_drafter(value, capsys):
    with pytest.raises(SystemExit):
        _parse("--stage1-skip", value)
    assert "unknown drafter" in capsys.readouterr().err


def test_the_parser_s_modes_are_the_engine_s():
    """The parser keeps its own copy (the engine imports torch); they must not drift apart."""
    from core.commands.convert import MODES
    from core.engine import MODES as ENGINE_MODES

    assert MODES == ENGINE_MODES


def test_scan_layout_reaches_the_ocr_drafter():
    assert engine_config(_parse()).drafter == f"auto:layout={tuning.DEFAULT_SCAN_LAYOUT}"
    assert engine_config(_parse("--scan-layout", "cdla")).drafter == "auto:layout=cdla"
    assert engine_config(_parse("--drafter", "rapidocr", "--scan-layout", "cdla")).drafter == "rapidocr:layout=cdla"
    assert engine_config(_parse("--drafter", "textlayer")).drafter == "textlayer"


def test_scan_layout_is_refused_for_a_drafter_without_ocr():
    from core.errors import HSDError

    other = next(layout for layout in SCAN_LAYOUTS if layout != tuning.DEFAULT_SCAN_LAYOUT)
    with pytest.raises(HSDError, match="OCR drafters"):
        engine_config(_parse("--drafter", "textlayer", "--scan-layout", other))
