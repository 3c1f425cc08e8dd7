"""KV-cache surgery for speculative decoding over ``transformers`` 5.x ``DynamicCache``.

A ``DynamicCache`` keeps one layer object per decoder layer in ``cache.layers``; each holds ``keys`` and
``values`` of shape ``(B, kv_heads, T, head_dim)``. Everything here works on those tensors directly and
only for full-attention layers (``DynamicLayer``): a sliding-window layer drops old columns, so its
column indices would not line up with the attention mask's.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


def _full_attention_layers(cache: DynamicCache) -> list[DynamicLayer]:
    layers = list(cache.layers)
    for layer in layers:
        if type(layer) is not DynamicLayer:
            raise TypeError(f"cache surgery supports full-attention DynamicLayer only, not {type(layer).__name__}")
    return layers


def cache_length(cache: DynamicCache) -> int:
    """Columns (token slots, padding and holes included) currently in the cache."""
    return int(cache.get_seq_length())


def cache_crop(cache: DynamicCache, length: int) -> DynamicCache:
    """Keep the first ``length`` columns of every row, in place; returns ``cache``.

    ``DynamicCache.crop`` in 5.x takes a *negative* count of columns to drop; this hides that.
    """
    excess = cache_length(cache) - length
    if excess < 0:
        raise ValueError(f"cannot crop a cache of {cache_length(cache)} columns to {length}")
    if excess:
        cache.crop(-excess)
    return cache


def cache_select(cache: DynamicCache, index: torch.Tensor) -> DynamicCache:
    """Keep, per row, the columns ``index`` names, in that order; in place, returns ``cache``.

    ``index``: ``(B, T_new)`` long, column numbers into the current ``(B, heads, T, head_dim)`` tensors.
    Used to keep the accepted path of a verified draft tree, or to compact rows after rejections
    (rows with fewer kept columns repeat a padding column that the caller's mask then blocks).
    """
    for layer in _full_attention_layers(cache):
        if not layer.is_initialized:
            continue
        batch, heads, _, head_dim = layer.keys.shape
        if index.shape[0] != batch:
            raise ValueError(f"index has {index.shape[0]} rows, cache has {batch}")
        gather_index = index.to(layer.keys.device).view(batch, 1, -1, 1).expand(batch, heads, -1, head_dim)
        layer.keys = layer.keys.gather(2, gather_index)
        layer.values = layer.values.gather(2, gather_index)
    return cache


def merge_caches_left_padded(caches: list[DynamicCache]) -> tuple[DynamicCache, torch.Tensor]:
    """Stack caches (each of any batch size) into one batch, left-padding shorter ones with zeros.

    Returns ``(merged, pad_counts)``: ``merged`` holds ``sum(B_i)`` rows of ``T = max(T_i)`` columns and
    ``pad_counts`` ``(sum(B_i),)`` long says how many leading columns of each row are padding, which the
    caller's attention mask must block. Row ``r``'s logical position ``i`` sits at column
    ``pad_counts[r] + i``. The input caches are left unchanged.
    """
    if not caches:
        raise ValueError("nothing to merge")
    per_cache_layers = [_full_attention_layers(c) for c in caches]
    n_layers = len(per_cache_layers[0])
    if any(len(layers) != n_layers for layers in per_cache_layers):
        raise ValueError("caches come from models with different numbers of layers")
    lengths = [cache_length(c) for c in caches]
    total = max(lengths)
    merged_layers = []
    for layer_idx in range(n_layers):
        keys, values = [], []
        for layers, length in zip(per_cache_layers, lengths):
            k, v = layers[layer_idx].keys, layers[layer_idx].values
            pad = total - length
            # F.pad pads the last dims first: (head_dim: 0, 0), (T: pad left, 0).
            keys.append(torch.nn.functional.pad(k, (0, 0, pad, 0)))
            values.append(torch.nn.functional.pad(v, (0, 0, pad, 0)))
        merged_layers.append((torch.cat(keys, dim=0), torch.cat(values, dim=0)))
    pad_counts = torch.cat([
        torch.full((layers[0].keys.shape[0],), total - length, dtype=torch.long)
        for layers, length in zip(per_cache_layers, lengths)
    ])
    return DynamicCache(ddp_cache_data=merged_layers), pad_counts


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Boolean ``(B, q, T + q)`` (True = may attend) -> additive float mask ``(B, 1, q, T + q)``.

    Blocked entries get ``finfo(dtype).min`` rather than ``-inf`` so that a fully blocked query row
    (a padded draft slot) gives finite garbage instead of NaN.
    """
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask.unsqueeze(1)


def tree_pass_mask(valid: torch.Tensor, among: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive mask ``(B, 1, q, T + q)`` of one verification pass, written once.

    ``valid`` ``(B, T)`` bool: each row's real cache columns, which all its new tokens see;
    ``among`` ``(B, q, q)`` bool: which of the row's ``q`` new tokens each may see (its tree's
    ancestor mask, ``core.speculative.tree.ancestor_masks``; padding sees only itself). The same
    mask as ``additive_mask`` of the boolean one, without building that (``B x q x T``) first.

    On a CPU numpy writes it, on one thread: torch splits a write of this size over its threads,
    and on a machine whose cores are busy (a drafter beside the decode) the decoding thread then
    waits for the others ten times as long as the write takes (3 of the 3.5 ms a batched pass
    spent on its mask). Numpy writes the bit patterns of ``dtype`` (bfloat16 has no numpy type;
    0 is +0.0 in every float format).
    """
    B, T = valid.shape
    q = among.shape[1]
    if valid.device.type == "cpu":
        bits, blocked_bits = _blocked_bits(dtype)
        written = np.empty((B, 1, q, T + q), dtype=bits)
        written[:, 0, :, :T] = np.where(valid.numpy(), 0, blocked_bits)[:, None, :]
        written[:, 0, :, T:] = np.where(among.numpy(), 0, blocked_bits)
        return torch.from_numpy(written).view(dtype)
    blocked = torch.finfo(dtype).min
    zero = torch.zeros((), dtype=dtype, device=valid.device)
    mask = torch.empty((B, 1, q, T + q), dtype=dtype, device=valid.device)
    mask[:, 0, :, :T] = torch.where(valid, zero, blocked)[:, None, :]
    mask[:, 0, :, T:] = torch.where(among.to(valid.device), zero, blocked)
    return mask


@functools.lru_cache(maxsize=None)
def _blocked_bits(dtype: torch.dtype) -> tuple[type, int]:
    """The numpy integer type as wide as ``dtype`` and the bit pattern of its most negative value."""
    ints = {2: (torch.int16, np.int16), 4: (torch.int32, np.int32), 8: (torch.int64, np.int64)}
    torch_int, numpy_int = ints[torch.empty((), dtype=dtype).element_size()]
    return numpy_int, int(torch.tensor(torch.finfo(dtype).min, dtype=dtype).view(torch_int))


def causal_allowed(pad_counts: torch.Tensor, cache_columns: int, q: int) -> torch.Tensor:
    """Boolean ``(B, q, cache_columns + q)`` for a chain of ``q`` new tokens after a left-padded cache.

    Each new token sees the row's non-padding cache columns, the new tokens before it and itself.
    """
    batch = pad_counts.shape[0]
    columns = torch.arange(cache_columns, device=pad_counts.device)
    past = (columns.view(1, 1, -1) >= pad_counts.view(-1, 1, 1)).expand(batch, q, cache_columns)
    chain = torch.ones(q, q, dtype=torch.bool, device=pad_counts.device).tril()
    return torch.cat([past, chain.expand(batch, q, q)], dim=-1)


def concat_rows(cache_a: DynamicCache, valid_a: torch.Tensor, cache_b: DynamicCache,
                valid_b: torch.Tensor) -> tuple[DynamicCache, torch.Tensor]:
    """Append batch ``b``'s rows after batch ``a``'s, left-padding the narrower one; in place on ``a``.

    ``valid_*``: ``(B_*, T_*)`` bool, each row's real columns. Padding columns are zeros and invalid,
    so logical positions (which count valid columns) do not move. Used to admit freshly prefilled
    rows into a batch that is already decoding. Returns ``(cache_a, valid)`` with ``B_a + B_b`` rows.
    """
    width = max(valid_a.shape[1], valid_b.shape[1])

    def pad(t: torch.Tensor, dim: int) -> torch.Tensor:
        missing = width - t.shape[dim]
        if not missing:
            return t
        shape = list(t.shape)
        shape[dim] = missing
        return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim=dim)

    for la, lb in zip(_full_attention_layers(cache_a), _full_attention_layers(cache_b), strict=True):
        la.keys = torch.cat([pad(la.keys, 2), pad(lb.keys.to(la.keys.device), 2)], dim=0)
        la.values = torch.cat([pad(la.values, 2), pad(lb.values.to(la.values.device), 2)], dim=0)
    valid = torch.cat([pad(valid_a, 1), pad(valid_b.to(valid_a.device), 1)], dim=0)
    return cache_a, valid
