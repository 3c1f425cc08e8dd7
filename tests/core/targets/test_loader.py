"""load_target: errors a user can cause, device/dtype choice, remote-code policy, Target basics."""

from __future__ import annotations

import inspect

import pytest
import torch

from core.errors import ModelLoadError
from core.targets import DEFAULT_MODEL, load_target
from core.targets.loader import pick_dtype


@pytest.fixture
def offline(monkeypatch):
    """No network attempts (the hub client would otherwise retry for half a minute)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def test_default_model_is_hunyuan_ocr():
    assert DEFAULT_MODEL == "tencent/HunyuanOCR"


def test_missing_folder_says_how_to_point_at_one(tmp_path):
    with pytest.raises(ModelLoadError) as err:
        load_target(str(tmp_path / "no-such-model"))
    assert "local folder" in str(err.value) and "hsd tiny-model" in str(err.value)


def test_unknown_hub_id_offline_raises_model_load_error(offline):
    with pytest.raises(ModelLoadError) as err:
        load_target("no-such-org/no-such-model-4711")
    assert "no-such-org/no-such-model-4711" in str(err.value) and "hsd tiny-model" in str(err.value)


def test_folder_without_model_raises_model_load_error(tmp_path, offline):
    (tmp_path / "README.md").write_text("not a model")
    with pytest.raises(ModelLoadError):
        load_target(str(tmp_path))


def test_unsupported_family_is_named(tmp_path, offline):
    from transformers import LlamaConfig

    LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="llama.*supported families"):
        load_target(str(tmp_path))


def test_remote_code_only_when_asked(monkeypatch):
    assert inspect.signature(load_target).parameters["trust_remote_code"].default is False
    seen = {}

    def fake_from_pretrained(name, **kwargs):
        seen.update(kwargs)
        raise OSError("stop here")

    import transformers

    from core.targets import loader

    monkeypatch.setattr(loader, "hub_reachable", lambda: True)  # as online: the hub id goes to transformers
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", fake_from_pretrained)
    with pytest.raises(ModelLoadError):
        load_target("some-org/some-model")
    assert seen["trust_remote_code"] is False
    with pytest.raises(ModelLoadError):
        load_target("some-org/some-model", trust_remote_code=True)
    assert seen["trust_remote_code"] is True


def test_dtype_choice():
    assert pick_dtype(torch.device("cpu")) == torch.float32
    assert pick_dtype(torch.device("cuda")) == torch.bfloat16
    assert pick_dtype(torch.device("cpu"), "bf16") == torch.bfloat16
    with pytest.raises(ModelLoadError):
        pick_dtype(torch.device("cpu"), "int3")


def test_loaded_tiny_target_attributes(tiny_target):
    target = tiny_target("qwen2_5_vl")
    assert target.family == "qwen2_5_vl"
    assert target.device == torch.device("cpu") and target.dtype == torch.float32
    # The real embedding's width, wider than the real tokenizer (151 665 tokens).
    assert target.vocab_size == 151936 and len(target.tokenizer) == 151665
    im_end = target.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end == 151645
    assert im_end in target.eos_token_ids and isinstance(target.eos_token_ids, frozenset)
    assert target.pad_token_id == target.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    text = "The revenue grew by 12 percent: $x^2$ <td>1,204</td>"
    ids = target.encode(text)
    assert all(isinstance(i, int) for i in ids) and target.decode(ids) == text
    assert target.decode([im_end] + ids + [im_end]) == text
    assert target.decode(torch.tensor(ids)) == text


def test_chat_template_from_json_file_when_processor_needs_fallback(tiny_target_dir, tmp_path, offline):
    """Older hub checkpoints keep the template in chat_template.json; the image-only processor finds it."""
    import json
    import shutil

    folder = shutil.copytree(tiny_target_dir("qwen2_5_vl"), tmp_path / "model")
    template = (folder / "chat_template.jinja").read_text()
    (folder / "chat_template.jinja").unlink()
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    target = load_target(str(folder), device="cpu")
    assert target.processor.chat_template == template


def test_a_cached_hub_id_loads_from_its_snapshot_while_the_hub_is_unreachable(monkeypatch, tmp_path):
    from core.targets import loader

    monkeypatch.setattr(loader, "hub_reachable", lambda: False)
    monkeypatch.setattr(loader, "cached_snapshot", lambda hub_id: tmp_path if hub_id == "org/cached" else None)
    assert loader.model_source("org/cached") == str(tmp_path)
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache.*cannot be reached"):
        loader.model_source("org/not-cached")
    monkeypatch.setattr(loader, "hub_reachable", lambda: True)
    assert loader.model_source("org/not-cached") == "org/not-cached"
    assert loader.model_source(str(tmp_path)) == str(tmp_path)


def test_the_hubs_retry_lines_are_held_back_while_a_model_loads(monkeypatch, caplog):
    """A network lost mid-load made the hub client log each retry; the load's error says it once."""
    import logging

    import transformers

    from core.targets import loader

    def flaky(name, **kwargs):
        logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 1s [Retry 1/5].")
        raise OSError("We couldn't connect to the hub")

    monkeypatch.setattr(loader, "hub_reachable", lambda: True)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", flaky)
    caplog.set_level(logging.WARNING)
    with pytest.raises(ModelLoadError, match="couldn't connect"):
        load_target("some-org/some-model")
    assert "Retrying" not in caplog.text
    logging.getLogger("huggingface_hub.utils._http").warning("after the load")
    assert "after the load" in caplog.text  # the hub's logs are back once the load ends
