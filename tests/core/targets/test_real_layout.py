"""The tiny models carry the real checkpoints' layouts: what a real checkpoint would feed our code.

Each family's special tokens sit at their real ids, its vocabulary and stop ids are the real ones,
its rotary sections are the real proportions on a tiny head, its processor has the real limits.
Where the real metadata files are at hand (``realmodel.py``) the constants are checked against them.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from PIL import Image

from core.targets.real_layouts import LAYOUTS
from core.targets.tiny import TINY_HEAD_DIM, build_tiny_model
from tests.core.targets.realmodel import real_file

#: HunyuanOCR's real processor on real images (real_image_grid_reference.json and
#: real_prompt_reference.json): (width, height) -> grid (t, h, w) and image tokens in input_ids.
HUNYUAN_GRIDS = [((1024, 256), (1, 16, 64), 266), ((512, 512), (1, 32, 32), 274),
                 ((384, 768), (1, 48, 24), 314), ((800, 352), (1, 22, 50), 288)]
#: The prompt of real_prompt_reference.json (line-by-line text recognition).
HUNYUAN_REFERENCE_PROMPT = "请逐行识别图片中的所有文字。只输出图片中的文字本身，保留换行，不要解释。"

REAL_IDS = {
    "hunyuan_vl": {"<｜hy_begin▁of▁sentence｜>": 120000, "<｜hy_▁pad▁｜>": 120002, "<｜hy_User｜>": 120006,
                   "<｜hy_Assistant｜>": 120007, "<｜hy_place▁holder▁no▁2｜>": 120020,
                   "<｜hy_place▁holder▁no▁100｜>": 120118, "<｜hy_place▁holder▁no▁101｜>": 120119,
                   "<｜hy_place▁holder▁no▁102｜>": 120120, "<｜hy_place▁holder▁no▁103｜>": 120121},
    "glm_ocr": {"<|endoftext|>": 59246, "<|user|>": 59253, "<|begin_of_image|>": 59256,
                "<|end_of_image|>": 59257, "<|image|>": 59280, "<|video|>": 59281},
    "paddleocr_vl": {"</s>": 2, "<|IMAGE_PLACEHOLDER|>": 100295, "<|IMAGE_START|>": 101305,
                     "<|IMAGE_END|>": 101306},
    "qwen2_5_vl": {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645,
                   "<|vision_start|>": 151652, "<|vision_end|>": 151653, "<|image_pad|>": 151655},
    "qwen3_vl": {"<|im_end|>": 151645, "<|image_pad|>": 151655, "<think>": 151667},
}
REAL_STOPS = {"hunyuan_vl": {120007, 120020}, "glm_ocr": {59246, 59253}, "paddleocr_vl": {2},
              "qwen2_5_vl": {151645, 151643}, "qwen3_vl": {151645, 151643}}
REAL_VOCAB = {"hunyuan_vl": 120818, "glm_ocr": 59392, "paddleocr_vl": 103424, "qwen2_5_vl": 151936,
              "qwen3_vl": 151936}


@pytest.mark.parametrize("family", list(REAL_IDS))
def test_special_tokens_vocabulary_and_stop_ids_are_the_real_ones(family, tiny_target):
    target = tiny_target(family)
    for token, token_id in REAL_IDS[family].items():
        assert target.tokenizer.convert_tokens_to_ids(token) == token_id, token
    assert target.vocab_size == REAL_VOCAB[family]
    assert set(target.eos_token_ids) == REAL_STOPS[family]
    assert target.tokenizer.decode([REAL_IDS[family][next(iter(REAL_IDS[family]))]],
                                   skip_special_tokens=True) == ""
    text = "Revenue grew by 12 percent."
    assert target.decode(target.encode(text)) == text
    assert max(target.encode(text)) < 4096 or family == "paddleocr_vl"


@pytest.mark.parametrize("family", list(REAL_IDS))
def test_rotary_sections_are_the_real_proportions_on_a_tiny_head(family, tiny_target):
    rope = tiny_target(family).model.config.get_text_config().rope_parameters
    real = LAYOUTS[family].rope
    key = "xdrope_section" if "xdrope_section" in real else "mrope_section"
    scale = TINY_HEAD_DIM / LAYOUTS[family].real_head_dim
    # transformers stores HunyuanVL's xdrope as "dynamic" with an mrope_section, as the real capture shows.
    section = rope.get("xdrope_section") or rope["mrope_section"]
    assert section == [int(s * scale) for s in real[key]]
    rotated = TINY_HEAD_DIM * rope.get("partial_rotary_factor", 1.0)
    assert sum(section) * 2 == rotated  # every family rotates its whole head, GLM-OCR included
    if family == "glm_ocr":
        assert rope["partial_rotary_factor"] == 1.0 and section == [4, 6, 6]


@pytest.mark.parametrize("family", list(REAL_IDS))
def test_processor_has_the_real_limits(family, tiny_target):
    target = tiny_target(family)
    limits = LAYOUTS[family].processor
    assert target.region_min_pixels == limits.min_pixels
    size = target.processor.image_processor.size
    assert (size["shortest_edge"], size["longest_edge"]) == (limits.min_pixels, limits.max_pixels)
    assert target.processor.image_processor.patch_size == limits.patch_size


def test_hunyuan_prompt_has_the_real_structure(tiny_target):
    """BOS, image start, exactly the real number of image tokens, image end, the prompt, <｜hy_User｜>."""
    target = tiny_target("hunyuan_vl")
    saved = target.profile
    target.profile = dataclasses.replace(saved, page_prompt=HUNYUAN_REFERENCE_PROMPT)
    try:
        inputs = target.prompt_inputs(Image.new("RGB", (800, 352), "white"), kind="page")
    finally:
        target.profile = saved
    ids = inputs["input_ids"][0].tolist()
    assert inputs["image_grid_thw"][0].tolist() == [1, 22, 50]
    assert ids[:2] == [120000, 120118]
    assert ids[2:2 + 288] == [120120] * 288 and ids[290] == 120119
    assert ids[-1] == 120006 and 120120 not in ids[291:]
    assert target.tokenizer.decode(ids[291:-1]) == HUNYUAN_REFERENCE_PROMPT


def test_hunyuan_prompt_matches_the_captured_real_one():
    """Against the real capture: same ids wherever the real tokenizer's ordinary words are not involved."""
    reference = json.loads(real_file("hunyuan_vl", "real_prompt_reference.json").read_text(encoding="utf-8"))
    assert reference["prompt"] == HUNYUAN_REFERENCE_PROMPT
    assert reference["image_grid_thw"] == [1, 22, 50] and reference["image_token_count"] == 288
    real = reference["input_ids"]
    assert real[:2] == reference["prefix_input_ids"] == [120000, 120118]
    assert real[2:290] == [120120] * 288 and real[290] == 120119 and real[-1] == 120006


@pytest.mark.parametrize("size, grid, count", HUNYUAN_GRIDS)
def test_hunyuan_image_grids_are_the_real_ones(size, grid, count, tiny_target):
    target = tiny_target("hunyuan_vl")
    inputs = target.prompt_inputs(Image.new("RGB", size, "white"), kind="page")
    ids = inputs["input_ids"][0].tolist()
    assert tuple(inputs["image_grid_thw"][0].tolist()) == grid
    assert ids.count(120120) == count and ids.index(120120) == 2 and ids[2 + count] == 120119


def test_hunyuan_grid_constants_are_the_captured_ones():
    reference = json.loads(real_file("hunyuan_vl", "real_image_grid_reference.json").read_text(encoding="utf-8"))
    captured = {(c["width"], c["height"]): (tuple(c["grid_thw"]), c["image_token_count"], c["image_token_span"])
                for c in reference["cases"]}
    for size, grid, count in HUNYUAN_GRIDS[:3]:
        assert captured[size] == (grid, count, [2, 2 + count])
    assert all(c["generated_token_ids"][-1] == 120007 for c in reference["cases"])  # it stops on eos


def test_hunyuan_constants_match_the_checkpoint_files():
    tokenizer_config = json.loads(real_file("hunyuan_vl", "tokenizer_config.json").read_text(encoding="utf-8"))
    layout = LAYOUTS["hunyuan_vl"]
    assert (tokenizer_config["bos_token"], tokenizer_config["eos_token"], tokenizer_config["pad_token"]) == (
        layout.bos, layout.eos, layout.pad)
    assert (tokenizer_config["image_token"], tokenizer_config["image_start_token"],
            tokenizer_config["image_end_token"]) == (layout.image_token, layout.image_start, layout.image_end)
    assert tokenizer_config["video_token"] == layout.extra["video_token"]
    processor = json.loads(real_file("hunyuan_vl", "processor_config.json").read_text(encoding="utf-8"))
    image = processor["image_processor"]
    limits = layout.processor
    assert (image["min_pixels"], image["max_pixels"], image["patch_size"], image["merge_size"],
            image["temporal_patch_size"], image["resample"]) == (
        limits.min_pixels, limits.max_pixels, limits.patch_size, limits.merge_size,
        limits.temporal_patch_size, limits.resample)
    assert tuple(image["image_mean"]) == limits.image_mean and tuple(image["image_std"]) == limits.image_std
    summary = real_file("hunyuan_vl", "real_config_summary.txt").read_text(encoding="utf-8")
    for fact in ('"eos_token_id": 120007', '"eod_token_id": 120020', '"bos_token_id": 120000',
                 '"pad_token_id": 120002', '"image_newline_token_id": 120121', '"vocab_size": 120818'):
        assert fact in summary
    assert '"xdrope_section": [\n      16,\n      16,\n      16,\n      16\n    ]' in summary


def test_glm_constants_match_the_checkpoint_config():
    config = json.loads(real_file("glm_ocr", "config.json").read_text(encoding="utf-8"))
    layout = LAYOUTS["glm_ocr"]
    text = config["text_config"]
    assert text["vocab_size"] == layout.vocab_size and set(text["eos_token_id"]) == set(layout.stop_ids)
    assert text["pad_token_id"] == layout.id(layout.pad)
    assert text["rope_parameters"]["mrope_section"] == layout.rope["mrope_section"]
    assert text["rope_parameters"]["partial_rotary_factor"] == 1.0 and text["head_dim"] == layout.real_head_dim
    for key, token in (("image_start_token_id", "<|begin_of_image|>"), ("image_end_token_id", "<|end_of_image|>"),
                       ("image_token_id", "<|image|>"), ("video_token_id", "<|video|>"),
                       ("video_start_token_id", "<|begin_of_video|>"), ("video_end_token_id", "<|end_of_video|>")):
        assert config[key] == layout.id(token), key


def _messages(prompt: str, system: str | None = None) -> list[dict]:
    user = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
    return ([{"role": "system", "content": system}] if system is not None else []) + [user]


@pytest.mark.parametrize("system", [None, "", "You read documents."])
def test_hunyuan_template_renders_as_the_checkpoints_own(system, tiny_target):
    from jinja2 import Template

    real = Template(real_file("hunyuan_vl", "chat_template.jinja").read_text(encoding="utf-8"))
    ours = tiny_target("hunyuan_vl").tokenizer
    messages = _messages(HUNYUAN_REFERENCE_PROMPT, system)
    assert ours.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == real.render(
        messages=messages)


def test_paddle_template_renders_as_the_checkpoints_own(tiny_target):
    from jinja2 import Template

    notes = real_file("paddleocr_vl", "chat_template.jinja").read_text(encoding="utf-8")
    body = notes.split("(see SOURCES.md):", 1)[1].split("Same demo", 1)[0].replace("\\\\n", "\\n")
    real = Template(body.strip() + "\n")
    ours = tiny_target("paddleocr_vl").tokenizer
    for prompt in ("OCR:", "Table Recognition:"):
        messages = _messages(prompt)
        assert ours.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == real.render(
            messages=messages, add_generation_prompt=True).strip("\n")


def test_tiny_model_built_from_the_checkpoint_files_prompts_alike(tmp_path, tiny_target):
    """``metadata``: the checkpoint's own template and processor config give the same input ids."""
    from core.targets.loader import load_target

    folder = real_file("hunyuan_vl", "chat_template.jinja").parent
    built = build_tiny_model(tmp_path / "hy", "hunyuan_vl", metadata=folder)
    assert (built / "chat_template.jinja").read_text(encoding="utf-8") == (folder / "chat_template.jinja").read_text(
        encoding="utf-8")
    image = Image.new("RGB", (640, 480), "white")
    real = load_target(str(built), device="cpu").prompt_inputs(image, kind="page")["input_ids"]
    assert real.tolist() == tiny_target("hunyuan_vl").prompt_inputs(image, kind="page")["input_ids"].tolist()
