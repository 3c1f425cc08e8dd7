"""Tiny model folders: hub layout, tokenizer, CLI."""

from __future__ import annotations

import pytest

from core.targets.tiny import TINY_ARCHS, build_tiny_model


def test_all_five_families_are_buildable():
    assert set(TINY_ARCHS) == {"qwen2_5_vl", "hunyuan_vl", "qwen3_vl", "paddleocr_vl", "glm_ocr"}


def test_unknown_arch(tmp_path):
    with pytest.raises(ValueError, match="unknown tiny architecture"):
        build_tiny_model(tmp_path, "llama")


def test_folder_is_laid_out_like_a_hub_checkpoint(tiny_target_dir):
    folder = tiny_target_dir("qwen2_5_vl")
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "chat_template.jinja"} <= names
    assert not any(name.endswith((".bin", ".pt")) for name in names)


def test_tokenizer_reloads_with_family_tokens(tiny_target_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_target_dir("hunyuan_vl")))
    assert len(tokenizer) == 120818  # the real vocabulary's size, special tokens at their real ids
    assert tokenizer.image_token == "<｜hy_place▁holder▁no▁102｜>" and tokenizer.image_token_id == 120120
    assert tokenizer.pad_token_id == 120002
    ids = tokenizer.encode("<table><tr><td>2023</td></tr></table>", add_special_tokens=False)
    assert len(ids) < 20  # the corpus taught it HTML merges


def test_cli_writes_a_model(tmp_path, capsys):
    from core.cli import main

    assert main(["tiny-model", str(tmp_path / "m"), "--arch", "paddleocr_vl", "--seed", "3"]) == 0
    assert (tmp_path / "m" / "model.safetensors").exists()
    assert "paddleocr_vl" in capsys.readouterr().out


def test_cli_rejects_a_missing_metadata_folder(tmp_path, capsys):
    from core.cli import main

    assert main(["tiny-model", str(tmp_path / "m"), "--arch", "glm_ocr", "--metadata", str(tmp_path / "nope")]) == 2
    assert "metadata folder not found" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_same_seed_same_weights(tiny_target_dir, tmp_path):
    from safetensors.torch import load_file

    import torch

    again = load_file(build_tiny_model(tmp_path / "again", "paddleocr_vl", seed=0) / "model.safetensors")
    first = load_file(tiny_target_dir("paddleocr_vl") / "model.safetensors")
    assert again.keys() == first.keys()
    assert all(torch.equal(again[name], first[name]) for name in first)
