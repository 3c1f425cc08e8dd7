"""Every target the engine meets declares the whole ``PageTarget`` protocol, so that nothing is
looked up by ``getattr``: the five families' tiny models, the replay target and the cost-replay
target (replaying, and passing the real model's own output through)."""

from __future__ import annotations

import pytest
import torch

from core.targets.profiles.base import Profile
from core.targets.protocol import DecodeTarget, PageTarget

ARCHS = ["qwen2_5_vl", "hunyuan_vl", "qwen3_vl", "paddleocr_vl", "glm_ocr"]


def declared(protocol) -> set[str]:
    """Every member ``protocol`` declares (it and the protocols it extends): data members by
    annotation, methods by definition."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls.__module__ != PageTarget.__module__:
            continue
        names |= set(cls.__dict__.get("__annotations__", {}))
        names |= {name for name, value in vars(cls).items() if callable(value) and not name.startswith("_")}
    return names


def test_the_protocol_names_what_the_engine_reads():
    assert declared(DecodeTarget) < declared(PageTarget)
    assert declared(PageTarget) >= {"forward", "pad_token_id", "dtype", "measures_pass_cost", "clock", "device",
                                    "eos_token_ids", "profile", "vocab_size", "encode", "decode", "prefill",
                                    "prefill_batch"}


def assert_is_a_page_target(target) -> None:
    missing = sorted(name for name in declared(PageTarget) if not hasattr(target, name))
    assert not missing, f"{type(target).__name__} lacks {missing}"
    assert isinstance(target, PageTarget)
    assert isinstance(target.device, torch.device) and isinstance(target.dtype, torch.dtype)
    assert isinstance(target.pad_token_id, int) and isinstance(target.measures_pass_cost, bool)
    assert isinstance(target.clock(), float)
    assert isinstance(target.eos_token_ids, frozenset) and target.eos_token_ids
    assert target.profile is None or isinstance(target.profile, Profile)
    assert target.vocab_size is None or (isinstance(target.vocab_size, int) and target.vocab_size > 0)
    assert target.decode(target.encode("Total 42")) == "Total 42"


@pytest.mark.parametrize("arch", ARCHS)
def test_every_family_is_a_page_target(tiny_target, arch):
    target = tiny_target(arch)
    assert_is_a_page_target(target)
    assert target.profile.family == arch and target.vocab_size >= len(target.tokenizer)


def test_the_replay_targets_are_page_targets(tiny_target):
    from core.bench.replay import CostReplayTarget, ReplayTarget, ReplayTokenizer, base_tokenizer

    tokenizer = ReplayTokenizer(base_tokenizer("tiny"))
    assert_is_a_page_target(ReplayTarget(tokenizer))
    real = tiny_target("hunyuan_vl")
    assert_is_a_page_target(CostReplayTarget(real, ReplayTokenizer(base_tokenizer("tiny"))))
    assert_is_a_page_target(CostReplayTarget(real, replay=False))
