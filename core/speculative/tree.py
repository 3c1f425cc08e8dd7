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

from dataclasses import dataclass

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
        return all(p == i - 1 for i, p in enumerate(self.parents))

    def children(self) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in self.tokens]
        for i, p in enumerate(self.parents):
            if p >= 0:
                kids[p].append(i)
        return kids

    def ancestor_mask(self) -> torch.Tensor:
        """(q, q) bool: ``mask[i, j]`` is True where node i may attend to node j (j is i or an ancestor).

        By doubling, not node by node: after step k each row holds its ancestors up to 2**k - 1
        levels up and ``jump`` points 2**k levels up (the root stays the root), so a 64-token chain
        takes 7 tensor steps instead of 64 Python ones."""
        q = len(self.tokens)
        if self.is_chain:
            return torch.ones(q, q, dtype=torch.bool).tril_()
        jump = torch.tensor(self.parents)
        jump[0] = 0
        mask = torch.eye(q, dtype=torch.bool)
        reach = 1
        while reach <= max(self.depths):
            mask |= mask[jump]
            jump = jump[jump]
            reach *= 2
        return mask


def root_only(token: int) -> DraftTree:
    """The tree of plain one-token decoding: just the root."""
    return DraftTree([token], [-1], [0], [None])


def build_tree(
    root: int,
    continuations: list[tuple[list[int], tuple[int, int] | None]],
    max_nodes: int = 128,
) -> DraftTree:
    """Merge continuations (each a token list plus the draft position its first token came from)
    into one prefix tree under ``root``.

    Continuations are inserted in the order given (put the most likely first): shared prefixes are
    stored once, and insertion stops at ``max_nodes`` nodes, so later continuations may be cut short.
    Nodes come out in insertion order, which keeps ``parents[i] < i`` (what the mask needs).
    """
    tokens, parents, depths, origins = [root], [-1], [0], [None]
    child_of: dict[tuple[int, int], int] = {}  # (parent node, token) -> node
    for cont, origin in continuations:
        node = 0
        for k, tok in enumerate(cont):
            key = (node, tok)
            nxt = child_of.get(key)
            if nxt is None:
                if len(tokens) >= max_nodes:
                    break
                nxt = len(tokens)
                child_of[key] = nxt
                tokens.append(tok)
                parents.append(node)
                depths.append(depths[node] + 1)
                origins.append(None if origin is None else (origin[0], origin[1] + k))
            node = nxt
    return DraftTree(tokens, parents, depths, origins)
