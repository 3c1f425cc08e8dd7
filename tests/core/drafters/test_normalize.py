"""core.drafters.normalize: draft cleaning and the characters matchers compare."""

from __future__ import annotations

from core.drafters.normalize import clean_draft_text, normalize_for_match


def test_clean_draft_text_collapses_spaces_keeps_lines():
    assert clean_draft_text("  # Title \n\n\n\nsome \t  text\u3000here  \r\nnext ") == "# Title\n\nsome text here\nnext"


def test_clean_draft_text_full_width_and_ligatures():
    assert clean_draft_text("ＡＢＣ１２３（ｘ）") == "ABC123(x)"
    assert clean_draft_text("e\ufb03cient \ufb01le") == "efficient file"


def test_normalize_for_match_keeps_letters_digits_cjk():
    assert normalize_for_match("Hello, World_42! 表格（一）") == "HelloWorld42表格一"
