"""Draft trees: several candidate continuations merged into one prefix tree, flattened for one pass.

A tree is verified in a single forward pass. Its nodes are laid out in breadth-first order; node 0 is
the *root*: the token the target has already chosen (the bonus token of the previous step) and that is
not yet in the KV cache. Every other node is a draft token proposed to follow its parent.

Worked example: continuations ``[5, 6, 7]`` and ``[5, 8]`` after root token 4 give

    index   0  1  2  3  4
    token   4  5  6  8  7
    parent -1  0  1  1  2
    depth   0  1  2  2  3

and the attention mask lets each node see only itself and its ancestors (node 3 sees 0, 1, 3).
A single continuation is a chain, the degenerate tree where ``parent[i] == i - 1``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import torch


@dataclass
class DraftTree:
    """A flattened prefix tree.

    tokens:  (q,) token ids, node 0 is the root.
    parents: (q,) parent node index, -1 for the root; parents[i] < i always.
    depths:  (q,) distance from the root.
    origins: per node, the draft position it was copied from: ``(draft_id, index)`` or ``None``
             for the root. Used to attribute accepted tokens to drafter regions.
    """

    tokens: list[int]
    parents: list[int]
    depths: list[int]
    origins: list[tuple[int, int] | None]

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def is_chain(self) -> bool:
        return self.parents == _chain_parents(len(self.parents))

    def child(self) -> dict[tuple[int, int], int]:
        """``(node, token) -> child``, the first such child where a tree built otherwise than by
        ``build_tree`` (one child per token under a node) holds two: verification walks its
        accepted path by lookups."""
        n = len(self.tokens)
        return dict(zip(zip(self.parents[::-1], self.tokens[::-1]), range(n - 1, -1, -1)))

    def children(self) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in self.tokens]
        for i, p in enumerate(self.parents):
            if p >= 0:
                kids[p].append(i)
        return kids


def ancestor_masks(trees: list[DraftTree], width: int) -> torch.Tensor:
    """Every tree's ancestor mask in one ``(B, width, width)`` bool tensor; the nodes past a tree's
    size (its padding in a batch) see only themselves.

    Each node's ancestors are a Python integer used as a bit set (its parent's, plus its own bit:
    ``parents[i] < i``, so one walk), unpacked to bits for the whole batch at once. A padding
    node's row is the same in every pass of a width (``_identity_rows``)."""
    row_bytes = (width + 7) // 8
    identity = _identity_rows(width)
    packed = []
    for tree in trees:
        n = len(tree.parents)
        if tree.parents == _chain_parents(n):  # a chain (most proposals): the lower triangle
            packed.append(_chain_rows(width)[:n * row_bytes] + identity[n * row_bytes:])
            continue
        sets: list[int] = []
        for i, p in enumerate(tree.parents):
            sets.append((sets[p] if p >= 0 else 0) | (1 << i))
        packed.append(b"".join(map(int.to_bytes, sets, repeat(row_bytes, n), repeat("little", n)))
                      + identity[len(tree) * row_bytes:])
    bits = np.unpackbits(np.frombuffer(b"".join(packed), dtype=np.uint8), bitorder="little")
    return torch.from_numpy(bits.reshape(len(trees), width, row_bytes * 8)[:, :, :width].astype(bool))


@functools.lru_cache(maxsize=256)
def _chain_parents(n: int) -> list[int]:
    """A chain's parents, ``[-1, 0, 1, ..., n - 2]`` (shared: never changed)."""
    return list(range(-1, n - 1))


@functools.lru_cache(maxsize=64)
def _chain_rows(width: int) -> bytes:
    """Bit rows ``j`` sees ``0 .. j``, for ``j`` in ``range(width)``, packed as ``ancestor_masks`` packs."""
    row_bytes = (width + 7) // 8
    return b"".join(((2 << j) - 1).to_bytes(row_bytes, "little") for j in range(width))


@functools.lru_cache(maxsize=64)
def _identity_rows(width: int) -> bytes:
    """Bit rows ``j`` sees only ``j``, for ``j`` in ``range(width)``, packed as ``ancestor_masks`` packs."""
    row_bytes = (width + 7) // 8
    return b"".join((1 << j).to_bytes(row_bytes, "little") for j in range(width))


def root_only(token: int) -> DraftTree:
    """The tree of plain one-token decoding: just the root."""
    return DraftTree([token], [-1], [0], [None])


def build_tree(
    root: int,
    continuations: list[tuple[list[int], tuple[int, int] | None]],
    max_nodes: int = 128,
    fork_head: int = 0,
) -> DraftTree:
    """Merge continuations (each a token list plus the draft position its first token came from)
    into one prefix tree under ``root``.

    Continuations are inserted in the order given (put the most likely first): shared prefixes are
    stored once, and insertion stops at ``max_nodes`` nodes, so later continuations may be cut short.
    ``fork_head``: the first continuation goes in whole, every later one first only ``fork_head``
    tokens past where it leaves the tree, then each in full, in order: a later continuation that
    differs from the first at one letter deep inside keeps its fork when the first fills the tree.
    Nodes come out in insertion order, which keeps ``parents[i] < i`` (what the mask needs).
    """
    tokens, parents, depths, origins = [root], [-1], [0], [None]
    child_of: dict[tuple[int, int], int] = {}  # (parent node, token) -> node
    for i, (cont, origin) in enumerate(continuations):
        if not _insert(cont, origin, fork_head if i else None, max_nodes, tokens, parents, depths, origins, child_of):
            break
    if fork_head:
        for cont, origin in continuations[1:]:
            if not _insert(cont, origin, None, max_nodes, tokens, parents, depths, origins, child_of):
                break
    return DraftTree(tokens, parents, depths, origins)


def _insert(cont, origin, head, max_nodes, tokens, parents, depths, origins, child_of) -> bool:
    """Put ``cont`` into the tree (``head``: only that many tokens past its fork); False once the
    tree is full."""
    room = max_nodes - len(tokens)
    if room <= 0:
        return False  # full: a later continuation could only walk nodes that are there already
    node, k = 0, 0
    for k, tok in enumerate(cont):  # walk the prefix the tree already holds
        nxt = child_of.get((node, tok))
        if nxt is None:
            break
        node = nxt
    else:
        return True
    # The rest is new: below a new node nothing exists yet, so it goes in as one chain.
    rest = cont[k:k + min(room, head or room)]
    first, n = len(tokens), len(rest)
    tokens += rest
    chain = range(first, first + n)
    above = [node, *range(first, first + n - 1)]
    parents += above
    child_of.update(zip(zip(above, rest), chain))
    depth = depths[node] + 1
    depths += range(depth, depth + n)
    if origin is None:
        origins += [None] * n
    else:
        draft, at = origin
        origins += [(draft, at + i) for i in range(k, k + n)]
    return True
