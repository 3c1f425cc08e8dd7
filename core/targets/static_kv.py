"""A key/value cache written in place: one buffer per model load, no growth, no holes.

The eager engine's ``DynamicCache`` grows by ``torch.cat`` (each pass copies every layer's whole
cache), keeps a rejected tree node as a masked hole and gathers the whole cache again to squeeze
the holes out (``core.speculative.decode._compact``). Here one tensor ``kv`` of shape
``(2, layers, 1, kv_heads, capacity, head_dim)`` holds every layer's keys and values; a page's
prompt is copied in once, and then a pass of ``W`` tree tokens at ``length`` cached tokens:

1. writes its ``W`` keys and values at columns ``[length, length + W)`` of every layer
   (``PassCache.update``: ``index_put_``, in place) and attends over ``[0, length + W)`` only,
   through a view (no copy);
2. after verification, ``StaticPageCache.accept`` moves the accepted path's columns to
   ``[length, length + a)`` (a gather and a write of ``a`` columns per buffer)
   and the rejected nodes' columns are simply written over by the next pass.

The additive attention mask lives in a preallocated ``(1, 1, max_width, capacity)`` buffer too:
columns before ``length`` are zeros (written once, as they are accepted); a pass writes only its
``W x W`` tree block. One row (the page, or one region) per cache: Stage 1's batched rows keep the
eager engine (``core.speculative.decode``).
"""

from __future__ import annotations

import torch


class PassCache:
    """What a decoder layer's attention sees during one pass (duck-typed as a transformers cache:
    the layers call ``update`` only, given a prepared 4-D mask and explicit positions).

    ``update`` writes the pass's keys and values at ``write_at`` and returns the first ``visible``
    columns, a view of the static buffer."""

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], write_at: torch.Tensor, visible):
        self.keys = keys
        self.values = values
        self.write_at = write_at
        self.visible = visible

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        # An index_put_ on the layer's own buffer (not a view of a larger one): torch.compile then
        # writes the W columns in place instead of copying the buffer.
        keys[:, :, self.write_at] = key_states.to(keys.dtype)
        values[:, :, self.write_at] = value_states.to(values.dtype)
        return keys[:, :, : self.visible], values[:, :, : self.visible]

    def get_seq_length(self, layer_idx: int = 0):
        return self.visible - self.write_at.shape[0]


class StaticPageCache:
    """One row's cache and attention mask, allocated once (``capacity`` columns) and reused by
    every page (``begin``). ``length``: the row's cached tokens, all of them real (no holes)."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int, max_width: int,
                 dtype: torch.dtype, device):
        self.capacity = capacity
        self.max_width = max_width
        self.dtype = dtype
        shape = (1, kv_heads, capacity, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.blocked = torch.finfo(dtype).min
        self.mask = torch.full((1, 1, max_width, capacity), self.blocked, dtype=dtype, device=device)
        # A pass's mask laid out row after row (``pass_mask(packed=True)``): a CPU's attention kernel
        # reads a mask whose rows are a buffer's rows (strided) a third slower at every layer.
        self.packed = torch.empty(max_width * capacity, dtype=dtype, device=device)
        self.length = 0
        self.written = 0  # the width of the pass written last, not yet accepted

    @classmethod
    def for_model(cls, model, capacity: int, max_width: int, dtype: torch.dtype, device) -> "StaticPageCache":
        """Sized from ``model``'s text configuration."""
        text = model.config.get_text_config()
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        kv_heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
        return cls(text.num_hidden_layers, kv_heads, head_dim, capacity, max_width, dtype, device)

    def fits(self, length: int, width: int) -> bool:
        return length + width <= self.capacity and width <= self.max_width

    def begin(self, cache, length: int) -> None:
        """Copy a page's prompt (a one-row ``DynamicCache`` of ``length`` real columns) in."""
        for keys, values, layer in zip(self.keys, self.values, cache.layers, strict=True):
            keys[:, :, :length].copy_(layer.keys[:, :, -length:])
            values[:, :, :length].copy_(layer.values[:, :, -length:])
        self.mask[..., :length] = 0
        self.mask[..., length:] = self.blocked  # what an earlier page accepted (a full-length pass sees it)
        self.length = length
        self.written = 0

    def pass_mask(self, block: torch.Tensor, packed: bool = False) -> torch.Tensor:
        """The ``(1, 1, width, length + width)`` mask of a pass whose tree's ancestor mask, padded to
        ``width``, is ``block`` (``(width, width)`` bool): the block written in place, the rest a view
        of what the buffer holds; where ``packed``, a contiguous copy of it (in ``packed``, allocated
        once), which the pass's every layer then reads at the kernel's full speed."""
        n, width = self.length, block.shape[0]
        block = block.to(self.mask.device)
        self.mask[0, 0, :width, n:n + width] = torch.where(block, 0.0, self.blocked).to(self.dtype)
        self.written = width
        view = self.mask[:, :, :width, : n + width]
        if not packed:
            return view
        rows = self.packed[: width * (n + width)].view(1, 1, width, n + width)
        rows.copy_(view)
        return rows

    def accept(self, path: list[int]) -> None:
        """Keep the accepted nodes (tree indices, in order, the root first) of the pass just written
        at ``length``: their columns move to ``[length, length + len(path))`` for every layer."""
        n, a = self.length, len(path)
        if path != list(range(a)):  # a chain accepted from its start is in place already
            src = torch.tensor([n + i for i in path], device=self.mask.device)
            for buffer in self.keys + self.values:
                buffer[:, :, n:n + a] = buffer.index_select(2, src)
        self.mask[..., n:n + a] = 0
        self.mask[..., n + a:n + self.written] = self.blocked  # the rejected nodes' block, for a full-length pass
        self.length = n + a
        self.written = 0

    def to_dynamic(self):
        """The cached tokens as an eager ``DynamicCache`` and its ``valid`` columns (all real), for a
        page that goes on with the eager engine (rows admitted beside it, or the buffer full)."""
        from transformers import DynamicCache

        n = self.length
        layers = [(k[:, :, :n].clone(), v[:, :, :n].clone()) for k, v in zip(self.keys, self.values)]
        valid = torch.ones((1, n), dtype=torch.bool, device=self.mask.device)
        return DynamicCache(ddp_cache_data=layers), valid
