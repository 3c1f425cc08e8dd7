"""Every eos / eod the real configs name stops both ar and hsd (HunyuanOCR: 120007 and 120020)."""

from __future__ import annotations

import pytest
import torch
from PIL import Image, ImageDraw

from core.drafters.base import Region
from core.engine import Engine, EngineConfig

MAX_NEW = 120


def _page():
    img = Image.new("RGB", (400, 520), "white")
    draw = ImageDraw.Draw(img)
    for i in range(8):
        draw.text((20, 20 + 50 * i), f"Row {i}: the target decides where a page ends", fill="black")
    return img


def _run(target, image, mode, regions):
    return Engine(EngineConfig(mode=mode, max_new_tokens=MAX_NEW), target=target).convert_image(
        image, regions, 300.0, 390.0)


@pytest.fixture(scope="module")
def hunyuan(tiny_target_dir):
    from core.targets.loader import load_target

    return load_target(str(tiny_target_dir("hunyuan_vl")), device="cpu")  # its own copy: weights get edited


def test_hunyuan_stops_on_eos_and_eod(hunyuan):
    assert hunyuan.eos_token_ids == frozenset({120007, 120020})


@pytest.mark.parametrize("stop_id", [120020, 120007])
def test_a_stop_id_ends_ar_and_hsd_alike(hunyuan, stop_id):
    image = _page()
    free = _run(hunyuan, image, "ar", [])
    assert len(free.output_tokens) == MAX_NEW
    # Make the stop id win wherever the token the model writes 40th would (a trained model's eod
    # after its last line): its output row becomes that token's, slightly larger.
    word = free.output_tokens[40]
    head = hunyuan.model.get_output_embeddings().weight
    saved = head[stop_id].clone()
    try:
        with torch.no_grad():
            head[stop_id] = head[word] * 1.05
        ar = _run(hunyuan, image, "ar", [])
        drafts = [Region("text", (10, 10, 290, 380), hunyuan.decode(free.output_tokens), "rapidocr")]
        hsd = _run(hunyuan, image, "hsd", drafts)
    finally:
        with torch.no_grad():
            head[stop_id] = saved
    cut = free.output_tokens.index(word)
    assert 0 < len(ar.output_tokens) <= cut and ar.output_tokens == free.output_tokens[:len(ar.output_tokens)]
    assert ar.stats.stop_reason == "eos" and stop_id not in ar.output_tokens
    assert hsd.output_tokens == ar.output_tokens and hsd.stats.stop_reason == "eos"
