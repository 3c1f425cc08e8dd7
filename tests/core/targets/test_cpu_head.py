"""The CPU output head computes the same logits as ``nn.Linear``, and CPU targets use it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core import tuning
from core.targets.cpu_head import SkinnyLinear, install_skinny_head, real_positions_only


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 16), (1, tuning.CPU_HEAD_MAX_ROWS), (2, tuning.CPU_HEAD_MAX_ROWS)])
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


@pytest.mark.parametrize("shape", [(2, 13), (4, 40)])  # under and over CPU_HEAD_MAX_ROWS in all
def test_only_the_real_positions_are_computed(shape):
    """Padding positions come back as zeros, real ones as ``nn.Linear`` gives them, and the head
    computes all positions again after the ``with`` block."""
    torch.manual_seed(0)
    plain = nn.Linear(64, 1000)
    head = nn.Linear(64, 1000)
    head.load_state_dict(plain.state_dict())
    head.__class__ = SkinnyLinear
    x = torch.randn(*shape, 64)
    real = torch.zeros(shape, dtype=torch.bool)
    real[0, :3] = real[1, :] = True  # a short row beside a full one
    with head.only(real):
        got = head(x)
    assert got.shape == (*shape, 1000)
    torch.testing.assert_close(got[real], plain(x)[real], rtol=1e-5, atol=1e-5)
    assert not got[~real].any()
    torch.testing.assert_close(head(x), plain(x), rtol=1e-5, atol=1e-5)
    assert head.real is None and "real" not in vars(head)


@pytest.mark.parametrize("arch", ["hunyuan_vl", "qwen2_5_vl"])
def test_a_target_pass_gives_the_same_logits_at_real_positions(tiny_target, arch):
    """``Target.forward(..., real=)`` changes nothing that verification reads."""
    from PIL import Image

    from core.targets.base import PrefillRequest
    from core.targets.kv import additive_mask

    target = tiny_target(arch)
    image = Image.new("RGB", (64, 64), "white")
    logits = {}
    for mode in ("all", "real"):
        prefill = target.prefill_batch([PrefillRequest(image, kind="page")] * 2)
        B, T = prefill.valid.shape
        q = 6
        tokens = torch.arange(10, 10 + B * q).reshape(B, q)
        positions = torch.tensor([length for length in prefill.lengths])[:, None] + torch.arange(q)
        allowed = torch.cat([prefill.valid[:, None, :].expand(B, q, T),
                             torch.ones(q, q, dtype=torch.bool).tril().expand(B, q, q)], dim=2)
        real = torch.ones(B, q, dtype=torch.bool)
        real[0, 2:] = False
        logits[mode] = target.forward(tokens, positions, additive_mask(allowed, target.dtype), prefill.cache,
                                      torch.tensor(prefill.rope_deltas), real=real if mode == "real" else None)
    torch.testing.assert_close(logits["real"][real], logits["all"][real])
    assert not logits["real"][~real].any()


def test_real_positions_only_is_a_no_op_without_a_skinny_head():
    model = nn.Linear(4, 4)  # no get_output_embeddings: nothing to switch
    with real_positions_only(model, torch.ones(1, 1, dtype=torch.bool)):
        pass
    head = nn.Linear(4, 4)
    head.__class__ = SkinnyLinear
    holder = type("Holder", (), {"get_output_embeddings": lambda self: head})()
    with real_positions_only(holder, None):
        assert head.real is None


def _argmax_cases():
    """Logits with ties, NaNs, infinities and rows of -inf, at word counts around the blocks (a
    short tail, none, fewer words than two blocks), contiguous and transposed as the skinny head
    gives them, at row counts below and above where the blocks are read."""
    from core.targets.cpu_head import ARGMAX_BLOCK, ARGMAX_BLOCKED_COLUMNS

    g = torch.Generator().manual_seed(0)
    for words in (ARGMAX_BLOCK - 1, 2 * ARGMAX_BLOCK, 5 * ARGMAX_BLOCK + 3, 4099, 25_003):
        for rows in (1, 9, ARGMAX_BLOCKED_COLUMNS, 70):
            for kind in range(5):
                x = torch.randint(0, 3, (rows, words), generator=g).float()  # many equal maxima
                if kind == 1:
                    x = torch.randn(rows, words, generator=g)
                if kind == 2:
                    x[torch.rand(rows, words, generator=g) < 0.01] = float("nan")
                if kind == 3:
                    x[torch.rand(rows, words, generator=g) < 0.05] = float("inf")
                    x[0] = float("-inf")
                if kind == 4:
                    x[:, -1] = 5.0  # the maximum in the tail alone
                yield x
                yield x.T.contiguous().T  # the skinny head's layout


def test_greedy_ids_are_argmax_exactly(monkeypatch):
    from core.targets import cpu_head
    from core.targets.cpu_head import greedy_ids

    monkeypatch.setattr(cpu_head, "ARGMAX_BLOCKED_LOGITS", 1)  # the blocks at every size but the columns'
    for x in _argmax_cases():
        assert torch.equal(greedy_ids(x), x.argmax(-1)), (x.shape, x.stride())
        batched = x[None]
        assert torch.equal(greedy_ids(batched), batched.argmax(-1))


def test_greedy_ids_of_the_skinny_head():
    from core.targets.cpu_head import greedy_ids

    torch.manual_seed(1)
    head = nn.Linear(32, 3000, bias=False)
    head.__class__ = SkinnyLinear
    x = torch.randn(1, tuning.CPU_HEAD_MAX_ROWS, 32)
    logits = head(x)
    assert logits.stride(-1) != 1  # the transposed product, read by blocks down its columns
    assert torch.equal(greedy_ids(logits), logits.argmax(-1))
