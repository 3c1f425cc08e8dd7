"""The output head on a CPU, for verification passes of a few tokens.

A verification pass runs ``k`` tokens (a draft chain or tree, 2 to about 64) through the model, and
its last layer multiplies them by the output embedding: ``(k, hidden) x (hidden, vocab)``. With a
document VLM's vocabulary (Qwen: 151 k, HunyuanOCR: 121 k) that head is the largest matrix of the
model, and MKL's ``linear`` (``x @ W.T``) handles a handful of rows poorly: on two cores, hidden 1024
and 120 818 words, 1 row takes 32 ms (reading the weights once), 4 rows 126 ms, 16 rows 175 ms.
The same product computed as ``(W @ x.T).T`` (many rows, few columns) takes 47 ms for 4 rows and
116 ms for 16. The result is a transposed view; reading it row-wise (the verifier's argmax) is as
fast as from a contiguous copy up to a few dozen rows and slower beyond (64 rows: 47 ms against
9 ms), where making it contiguous costs as much as the gain. A whole pass of a two-layer model of
that width, 64 tokens: 305 ms this way, 388 ms as ``linear``; above ``tuning.CPU_HEAD_MAX_ROWS`` rows the head runs
as before.

A batch of rows pads every row to the widest tree (a Stage 1 row proposing 2 tokens beside a page
row proposing 12 is 13 wide). Those padding positions need no logits: ``SkinnyLinear.only(real)``
makes the head compute only the real positions of the next call(s) and leave zeros at the rest. On
a CPU with a vocabulary of 121 k words the head is most of a pass's per-token cost, so a padded
position then costs only its share of the layers.

``install_skinny_head(model)`` switches the model's output head to this product in place (same
parameters, so tied embeddings stay tied); ``Target`` does it for every model placed on a CPU.

``greedy_ids(logits)`` is ``logits.argmax(-1)`` (the first of equal maxima, NaN above all) read
faster on a CPU, where torch's ``argmax`` costs about a nanosecond a logit and ``amax`` a tenth of
that: the maximum of every block of ``ARGMAX_BLOCK`` words, the first block holding the row's
maximum, then the argmax inside that block alone. On the skinny head's transposed result the blocks
run down its contiguous columns. One thread, 64 rows: a 4 096-word head 0.55 -> 0.13 ms (transposed),
0.26 -> 0.11 ms (contiguous); a 151 000-word head 63 -> 2.6 ms (transposed), 9.9 -> 3.0 ms; HunyuanOCR's
120 818 words at 16 rows (contiguous) 2.0 -> 0.5 ms.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from core import tuning


#: Words a block of ``greedy_ids``: each row's argmax runs over one block after its blocks' maxima.
ARGMAX_BLOCK = 128
#: ``greedy_ids`` reads by blocks from this many logits of a call (fewer: torch's argmax is as fast;
#: one thread, 4 096 words: even at 16 rows, faster from 24) ...
ARGMAX_BLOCKED_LOGITS = 100_000
#: ... and, on the skinny head's transposed logits, from this many rows (blocks down fewer columns
#: are slower than torch's argmax: 120 818 words, 24 rows 8.9 against 7.8 ms, 32 rows 1.1 against 17.8).
ARGMAX_BLOCKED_COLUMNS = 32


def greedy_ids(logits: torch.Tensor) -> torch.Tensor:
    """``logits.argmax(dim=-1)``, the same ids (the first of equal maxima; a NaN counts above every
    number), read by blocks on a CPU (see the module docstring). ``logits``: ``(..., V)``."""
    words = logits.shape[-1]
    blocks = words // ARGMAX_BLOCK
    flat = logits.reshape(-1, words)
    rows = flat.shape[0]
    columns = flat.stride(-1) != 1 and flat.stride(0) == 1  # the skinny head's (W @ x.T).T
    few = flat.numel() < ARGMAX_BLOCKED_LOGITS or (columns and rows < ARGMAX_BLOCKED_COLUMNS)
    if logits.device.type != "cpu" or blocks < 2 or few:
        return logits.argmax(dim=-1)
    at_rows = torch.arange(rows, device=flat.device)
    if columns:
        by_block = flat.T[: blocks * ARGMAX_BLOCK].unflatten(0, (blocks, ARGMAX_BLOCK))  # (blocks, B, rows)
        maxima = by_block.amax(dim=1).T  # (rows, blocks)
        block = maxima.argmax(dim=-1)
        inside = by_block[block, :, at_rows]  # (rows, B): each row's block
    else:
        by_block = flat[:, : blocks * ARGMAX_BLOCK].unflatten(-1, (blocks, ARGMAX_BLOCK))  # (rows, blocks, B)
        maxima = by_block.amax(dim=-1)
        block = maxima.argmax(dim=-1)
        inside = by_block[at_rows, block]
    ids = block * ARGMAX_BLOCK + inside.argmax(dim=-1)
    rest = blocks * ARGMAX_BLOCK
    if rest < words:  # the last words, fewer than a block: theirs where their maximum is above
        tail = flat[:, rest:]
        tail_max, best = tail.amax(dim=-1), maxima[at_rows, block]
        above = (tail_max > best) | (tail_max.isnan() & ~best.isnan())
        ids = torch.where(above, rest + tail.argmax(dim=-1), ids)
    return ids.reshape(logits.shape[:-1])


class SkinnyLinear(nn.Linear):
    """``nn.Linear`` whose forward, for at most ``tuning.CPU_HEAD_MAX_ROWS`` rows on a CPU, computes ``(W @ x.T).T``
    (a transposed view) instead of ``x @ W.T``. ``x``: ``(..., in)`` -> ``(..., out)``.

    Inside ``with head.only(real):`` (``real``: bool, ``x``'s leading shape, e.g. ``(B, q)``) only
    the positions where ``real`` is True are computed; the others come out as zeros."""

    real: torch.Tensor | None = None  # class default: every position (no state of its own; see below)

    @contextlib.contextmanager
    def only(self, real: torch.Tensor | None):
        self.real = real
        try:
            yield
        finally:
            del self.real  # back to the class default

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        real = self.real
        if real is not None and tuple(real.shape) == tuple(x.shape[:-1]) and not bool(real.all()):
            out = x.new_zeros(*x.shape[:-1], self.weight.shape[0])
            out[real] = self._product(x[real])
            return out
        return self._product(x)

    def _product(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // max(1, x.shape[-1])
        if x.device.type != "cpu" or rows > tuning.CPU_HEAD_MAX_ROWS or rows == 0:
            return super().forward(x)
        flat = x.reshape(rows, x.shape[-1])
        out = (self.weight @ flat.T).T  # (rows, out), strided: see the module docstring
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], self.weight.shape[0])


def install_skinny_head(model) -> bool:
    """Switch ``model``'s output head (``get_output_embeddings()``, a plain ``nn.Linear``) to
    ``SkinnyLinear`` in place: the module keeps its parameters and its place in the model, only its
    forward changes. Returns False (and changes nothing) where the head is anything else."""
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if get_head is not None else None
    if type(head) is not nn.Linear:
        return isinstance(head, SkinnyLinear)
    head.__class__ = SkinnyLinear  # a subclass without state of its own: a safe swap
    return True


def real_positions_only(model, real: torch.Tensor | None):
    """``with real_positions_only(model, real):`` the model's head computes only the positions where
    ``real`` (bool, ``(B, q)``) is True, where the head is a ``SkinnyLinear``; a no-op elsewhere."""
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if get_head is not None else None
    if real is None or not isinstance(head, SkinnyLinear):
        return contextlib.nullcontext()
    return head.only(real.to(head.weight.device))
