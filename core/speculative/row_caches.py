"""Where the decoding loop's rows keep their keys and values: the two engines' caches behind one face.

``core.speculative.decode`` runs a pass for all live rows, verifies, keeps each row's accepted path,
drops finished rows and admits new ones. What that does to the cache is the engine's:

* ``StaticRows`` (the fast engine, ``core.targets.fast_pass``): each row has a slot of the target's
  static cache, the accepted paths are moved into place, a finished row frees its slot and a row
  admitted mid-decode is copied into a free one. The rows go on eagerly (``to_eager``) only where
  the buffer is full, a tree is wider than any width, or more slots would not fit the device's memory.
  When the decode ends (``close``) the cache is told, and shrinks slots that recent decodes left unused.
* ``EagerRows``: one ``DynamicCache`` for the batch, ``(B, heads, T, head_dim)`` per layer. Rows
  have different lengths, so a boolean ``valid (B, T)`` says which cache columns hold a real token
  of that row; left padding from merging prefills and rejected tree nodes are holes the mask
  blocks. Holes are squeezed out when they grow (``tidy``); logical positions count valid tokens
  only, so holes never shift a position.

Both: ``forward`` (one pass of the rows' trees), ``accept`` (a row's verified path), ``end_pass``,
``keep`` (the rows still live), ``join`` (newcomers) and ``tidy``.
"""

from __future__ import annotations

from array import array

import torch

from core.speculative.tree import ancestor_masks
from core.targets.fast_pass import fast_passes_of
from core.targets.kv import cache_select, concat_rows, tree_pass_mask


def row_caches(target, rows: list, cache, valid: torch.Tensor, compact_ratio: float):
    """The rows' caches: on the target's static cache where it has a fast engine and the prompts
    fit it, else the eager engine's."""
    fast = fast_passes_of(target)
    if fast is None:
        return EagerRows(target, cache, valid, compact_ratio)
    return StaticRows(fast, compact_ratio).join(rows, cache, valid)


class EagerRows:
    """The eager engine's batch cache (see the module docstring)."""

    def __init__(self, target, cache, valid: torch.Tensor, compact_ratio: float):
        self.target, self.cache, self.valid = target, cache, valid
        self.compact_ratio = compact_ratio
        # Each row's valid columns, kept in step with ``valid`` so that ``tidy`` weighs the holes
        # without reading the tensor every pass.
        self._lengths: list[int] = valid.sum(dim=1).tolist()
        self._kept: list[int] = []  # this pass's kept cells of ``valid`` once widened, as flat indices
        self._q = 0
        self._used: int | None = None  # columns up to the last one a row kept in the latest pass

    def fits(self, trees) -> bool:
        return True

    def to_eager(self) -> "EagerRows":
        return self

    def forward(self, rows, trees, greedy: bool) -> torch.Tensor:
        """One pass over all rows' trees. Returns argmax ids (B, q) where ``greedy``, else logits (B, q, V)."""
        sizes = [len(t) for t in trees]
        B, q = len(trees), max(sizes)
        pad, device = self.target.pad_token_id, self.valid.device
        flat: list[int] = []  # tokens, positions and rope deltas: one tensor from one list
        for tree, n in zip(trees, sizes):
            flat += tree.tokens
            flat += [pad] * (q - n)
        for row, tree, n in zip(rows, trees, sizes):
            flat += [row.length + d for d in tree.depths]
            flat += [row.length] * (q - n)
        flat += [r.rope_delta for r in rows]
        values = long_tensor(flat)
        tokens, positions = values[:2 * B * q].view(2, B, q).unbind(0)
        rope_deltas = values[2 * B * q:]
        # padding needs no logits (a CPU head skips it); written as bytes, then one tensor op
        real = torch.frombuffer(bytearray(b"".join(b"\x01" * n + b"\x00" * (q - n) for n in sizes)), dtype=torch.bool)
        mask = tree_pass_mask(self.valid, ancestor_masks(trees, q), self.target.dtype)
        self._q = q
        if device.type != "cpu":
            tokens, positions, rope_deltas = tokens.to(device), positions.to(device), rope_deltas.to(device)
        return self.target.forward(tokens, positions, mask, self.cache, rope_deltas, real=real.view(B, q),
                                   greedy=greedy)

    def accept(self, b: int, path: list[int]) -> None:
        """Row ``b``'s accepted nodes: their columns of the pass just run are valid."""
        T = self.valid.shape[1]
        start = b * (T + self._q) + T  # row b's first column of this pass, in ``valid`` widened by the pass
        self._kept += [start + i for i in path]
        self._lengths[b] += len(path)
        # Every row keeps its root, past every older column: the last column a row keeps is this
        # pass's, and ``keep`` trims after it without reading ``valid`` back.
        self._used = max(self._used or 0, T + max(path) + 1)

    def end_pass(self) -> None:
        """``valid`` widened by the pass's columns, the accepted ones set: three tensor ops a pass."""
        valid = torch.nn.functional.pad(self.valid, (0, self._q))
        valid.view(-1).index_fill_(0, long_tensor(self._kept).to(valid.device), True)
        self.valid = valid
        self._kept = []

    def keep(self, indices: list[int]) -> None:
        """Only rows ``indices`` (in the batch's order) go on."""
        self.valid = _trim_tail(self.cache, self.valid, self._used)
        self._used = None
        if len(indices) < self.valid.shape[0]:
            self.valid = select_rows(self.cache, self.valid, indices)
            self._lengths = [self._lengths[b] for b in indices]

    def join(self, rows, cache, valid: torch.Tensor) -> "EagerRows":
        self.cache, self.valid = concat_rows(self.cache, self.valid, cache, valid)
        self._lengths += valid.sum(dim=1).tolist()
        return self

    def tidy(self) -> None:
        """Squeeze the holes out once squeezing would drop more than ``compact_ratio`` of the
        cache's columns (``_removable_fraction``)."""
        if self._lengths and _removable_fraction(self.valid.shape[1], self._lengths) > self.compact_ratio:
            self.valid = _compact(self.cache, self.valid)

    def close(self) -> None:
        """Nothing to give back: the cache is the batch's own."""


class StaticRows:
    """The rows on the fast engine's static cache: ``slots[b]`` is row ``b``'s (see the module docstring)."""

    def __init__(self, fast, compact_ratio: float):
        self.fast = fast
        self.compact_ratio = compact_ratio  # for the eager cache the rows may go on with
        self.slots: list[int] = []
        self._paths: list[list[int]] = []

    def fits(self, trees) -> bool:
        """Whether the pass of ``trees`` fits a width and every row's room in the buffer."""
        return self.fast.fits(max(len(t) for t in trees), self.slots)

    def forward(self, rows, trees, greedy: bool) -> torch.Tensor:
        self._paths = [[] for _ in rows]
        return self.fast.forward_rows(self.slots, trees, [r.rope_delta for r in rows], greedy)

    def accept(self, b: int, path: list[int]) -> None:
        self._paths[b] = path

    def end_pass(self) -> None:
        """Every row's accepted path into place, nothing else moves."""
        self.fast.accept_rows(self.slots, self._paths)

    def keep(self, indices: list[int]) -> None:
        kept = [self.slots[b] for b in indices]
        self.fast.cache.release([s for s in self.slots if s not in kept])
        self.slots = kept

    def join(self, rows, cache, valid: torch.Tensor) -> "StaticRows | EagerRows":
        """Copy newcomers (a merged prefill: ``cache`` and its ``valid`` columns) into free slots;
        where a prompt leaves the buffer no room, or the slots they need would take more memory than
        the device can give (``StaticPageCache.can_take``), the batch goes on eagerly."""
        fast = self.fast
        counts = valid.sum(dim=1).tolist()
        if (any(row.length != n or not fast.cache.fits(n, fast.widths[0]) for row, n in zip(rows, counts))
                or not fast.cache.can_take(len(rows))):
            if not self.slots:
                return EagerRows(fast.target, cache, valid, self.compact_ratio)
            return self.to_eager().join(rows, cache, valid)
        slots = fast.cache.take(len(rows))
        for b, slot in enumerate(slots):
            fast.cache.load(slot, cache, b, valid[b].nonzero().view(-1))
        self.slots += slots
        return self

    def to_eager(self) -> EagerRows:
        """The rows as an eager batch (their slots given back), for passes the buffer cannot hold."""
        cache, valid = self.fast.cache.to_dynamic(self.slots)
        self.close()
        return EagerRows(self.fast.target, cache, valid, self.compact_ratio)

    def tidy(self) -> None:
        """No holes to squeeze: rejected nodes are written over by the next pass."""

    def close(self) -> None:
        """Give the slots back (the rows are done, or went on eagerly): the decode is over for the
        static cache, whose buffers may then shrink (``StaticPageCache.decode_ended``)."""
        self.fast.cache.release(self.slots)
        self.slots = []
        self.fast.cache.decode_ended()


def long_tensor(values: list[int]) -> torch.Tensor:
    """A 1-D int64 tensor of ``values`` through a packed array: a few times cheaper than
    ``torch.tensor`` of a list, which converts element by element."""
    if not values:
        return torch.zeros(0, dtype=torch.long)
    return torch.frombuffer(array("q", values), dtype=torch.long)


# --- eager cache surgery -------------------------------------------------------------------------
# DynamicCache keeps per layer ``keys`` / ``values`` of shape (B, heads, T, head_dim).


def select_rows(cache, valid: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """Keep ``rows`` of the cache (in place) and returns their ``valid``."""
    idx = torch.tensor(rows, dtype=torch.long, device=valid.device)
    for layer in cache.layers:
        layer.keys = layer.keys.index_select(0, idx)
        layer.values = layer.values.index_select(0, idx)
    return valid.index_select(0, idx)


def _trim_tail(cache, valid: torch.Tensor, used: int | None = None) -> torch.Tensor:
    """Drop trailing columns that no row keeps (rejected draft nodes of every row); ``used``: the
    columns up to the last one a row keeps, where the caller knows it (else read from ``valid``)."""
    if used is None:
        kept = valid.any(dim=0).nonzero()
        used = int(kept.max()) + 1 if kept.numel() else 0
    if used < valid.shape[1]:
        for layer in cache.layers:
            layer.keys = layer.keys[:, :, :used]
            layer.values = layer.values[:, :, :used]
        valid = valid[:, :used]
    return valid


def _removable_fraction(columns: int, lengths: list[int]) -> float:
    """The share of the cache's ``columns`` a compaction would drop: all but the longest row's tokens
    (``lengths``: each row's valid columns).

    Holes are counted by the columns they widen every later pass by, not one by one: a short row
    beside a long one (a region's crop beside the page) is left padding up to the long row's
    length, which no compaction removes; counted as holes, it had the batch compacted after almost
    every pass, each time for a few columns."""
    return (columns - max(lengths)) / max(1, columns)


def _compact(cache, valid: torch.Tensor) -> torch.Tensor:
    """Squeeze holes out: each row's valid columns, in order, right-aligned (left padding)."""
    B, T = valid.shape
    counts = valid.sum(dim=1)
    width = int(counts.max())
    order = torch.arange(T, device=valid.device).expand(B, T)
    # sort keys: invalid columns first, then valid ones by position -> take the last `width`
    key = torch.where(valid, order + T, order)
    index = key.argsort(dim=1)[:, T - width:]
    cache_select(cache, index)
    return torch.gather(valid, 1, index)
