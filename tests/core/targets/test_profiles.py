"""Profiles: prompts per region label, position-id layout per family."""

from __future__ import annotations

import pytest
import torch

from core.targets.profiles import FAMILY_MODULES, get_profile


@pytest.mark.parametrize("family", list(FAMILY_MODULES))
def test_prompts(family):
    profile = get_profile(family)
    assert profile.family == family
    assert profile.prompt("page")
    assert profile.prompt("region", "table") == profile.table_prompt
    assert profile.prompt("region", "formula") == profile.formula_prompt
    assert profile.prompt("region", "title") == profile.text_prompt
    with pytest.raises(ValueError):
        profile.prompt("chapter")


def test_known_model_card_prompts():
    assert get_profile("paddleocr_vl").prompt("region", "table") == "Table Recognition:"
    assert get_profile("glm_ocr").prompt("region", "formula") == "Formula Recognition:"
    assert "markdown" in get_profile("hunyuan_vl").prompt("page")


@pytest.mark.parametrize("family,axes", [("qwen2_5_vl", 3), ("qwen3_vl", 3), ("paddleocr_vl", 3),
                                          ("glm_ocr", 3), ("hunyuan_vl", 4)])
def test_position_ids_add_row_delta_on_every_axis(family, axes):
    logical = torch.tensor([[10, 11, 11], [5, 6, 7]])
    position_ids = get_profile(family).position_ids(logical, torch.tensor([-3, 0]))
    assert position_ids.shape == (axes, 2, 3)
    for axis in range(axes):
        assert position_ids[axis].tolist() == [[7, 8, 8], [5, 6, 7]]


def test_hunyuan_runs_as_its_model_card_says():
    profile = get_profile("hunyuan_vl")
    assert profile.attention("cuda") == "eager" and profile.image_backend == "pil"
    assert profile.attention("cpu") == "sdpa"  # measured: faster on a CPU, same tokens
    assert profile.system_message is None and profile.messages("x")[0]["role"] == "user"
    assert get_profile("qwen2_5_vl").attention("cpu") == "sdpa"


def test_element_level_families_and_their_prompts():
    assert {f for f in FAMILY_MODULES if get_profile(f).element_level} == {"paddleocr_vl", "glm_ocr"}
    assert get_profile("paddleocr_vl").prompt("region", "chart") == "Chart Recognition:"
    assert get_profile("glm_ocr").prompt("region", "chart") == "Text Recognition:"
    assert get_profile("paddleocr_vl").stop_tokens == ("</s>",)  # <|end_of_sentence|> is a separator


def test_a_system_message_comes_first():
    import dataclasses

    profile = dataclasses.replace(get_profile("hunyuan_vl"), system_message="")
    assert [m["role"] for m in profile.messages("x")] == ["system", "user"]


def test_each_family_states_its_page_style_and_an_unknown_family_gets_them_all():
    from core.targets.profiles import any_style, style_of

    assert get_profile("qwen3_vl").style.openings[0] == "```markdown\n"
    assert get_profile("qwen2_5_vl").style.openings[0].startswith("```html")
    assert get_profile("hunyuan_vl").style.openings == ("",)
    every = any_style()
    assert {"", "```markdown\n", get_profile("qwen2_5_vl").style.openings[0]} <= set(every.openings)
    assert style_of(type("Stand-in", (), {"profile": None})()) == every
    assert style_of(type("T", (), {"profile": get_profile("glm_ocr")})()) == get_profile("glm_ocr").style
