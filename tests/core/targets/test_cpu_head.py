"""The CPU output head computes the same logits as ``nn.Linear``, and CPU targets use it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core.targets.cpu_head import MAX_ROWS, SkinnyLinear, install_skinny_head


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 16), (1, MAX_ROWS), (2, MAX_ROWS)])
def test_same_logits_as_linear(shape, bias):
    torch.manual_seed(0)
    plain = nn.Linear(64, 1000, bias=bias)
    skinny = nn.Linear(64, 1000, bias=bias)
    skinny.load_state_dict(plain.state_dict())
    skinny.__class__ = SkinnyLinear
    x = torch.randn(*shape, 64)
    got, want = skinny(x), plain(x)
    assert got.shape == want.shape == (*shape, 1000)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_switches_only_a_plain_linear_head_and_keeps_its_parameters():
    class Model(nn.Module):
        def __init__(self, head):
            super().__init__()
            self.embed = nn.Embedding(100, 8)
            self.lm_head = head

        def get_output_embeddings(self):
            return self.lm_head

    model = Model(nn.Linear(8, 100, bias=False))
    model.lm_head.weight = model.embed.weight  # tied, as HunyuanOCR's are
    keys = list(model.state_dict())
    assert install_skinny_head(model)
    assert type(model.lm_head) is SkinnyLinear
    assert model.lm_head.weight is model.embed.weight
    assert list(model.state_dict()) == keys
    assert install_skinny_head(model)  # already switched: still reported as installed

    odd = Model(nn.Sequential(nn.Linear(8, 100)))
    assert not install_skinny_head(odd)
    assert type(odd.lm_head) is nn.Sequential


@pytest.mark.parametrize("arch", ["hunyuan_vl", "qwen2_5_vl"])
def test_cpu_target_uses_the_skinny_head(tiny_target, arch):
    target = tiny_target(arch)
    assert type(target.model.get_output_embeddings()) is SkinnyLinear
