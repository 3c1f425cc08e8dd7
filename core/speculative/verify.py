"""Verification: which draft tokens does the target accept?

Exact rule (tau = 1): walk the tree from the root; at each node the target's argmax is the token it
would have produced next. If a child of the node carries that token, accept the child and go on;
otherwise stop. The argmax at the last accepted node is the *bonus* token: the target's own next
token, correct by construction, which becomes the root of the next step. The accepted tokens plus
the bonus are exactly what greedy decoding would have produced, so the output is lossless.

Relaxed rule (tau < 1, the paper's margin rule): accept the child u* with the highest
log-probability if ``log p(u*) - log p(argmax) >= log tau``, except inside math, where the exact
rule always applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.speculative.tree import DraftTree


@dataclass
class Acceptance:
    """Result of verifying one tree.

    path:  node indices accepted, starting with the root (0); their tokens enter the output and
           their KV entries are kept.
    bonus: the target's token after the last accepted node (root of the next step).
    """

    path: list[int]
    bonus: int

    @property
    def accepted_drafts(self) -> int:
        """Draft tokens accepted (the root is not a draft)."""
        return len(self.path) - 1


def verify_greedy(tree: DraftTree, argmax: list[int]) -> Acceptance:
    """The exact rule (tau = 1) on the target's argmax ids: ``argmax[i]`` is its token after node
    ``i`` (ids past ``len(tree)``, a batch's padding, are never read). All a lossless pass needs of
    the target, so a target may answer ids instead of logits (``Target.forward(greedy=True)``)."""
    child = tree.child()
    path = [0]
    node = 0
    while True:
        nxt = child.get((node, argmax[node]))
        if nxt is None:
            break
        path.append(nxt)
        node = nxt
    return Acceptance(path=path, bonus=argmax[node])


def verify_tree(
    tree: DraftTree,
    logits: torch.Tensor,
    tau: float = 1.0,
    relax_allowed: "callable | None" = None,
) -> Acceptance:
    """Verify ``tree`` against the target's logits for its nodes.

    logits: (q, V) — row i is the target's next-token distribution after node i.
    relax_allowed(path_tokens) -> bool: whether the relaxed rule may apply after these accepted
        tokens (False inside math). Ignored at tau = 1.
    """
    argmax = logits.argmax(dim=-1).tolist()  # (q,) one transfer, not one per node
    if tau >= 1.0:
        return verify_greedy(tree, argmax)
    kids = tree.children()
    log_tau = math.log(tau)
    logprobs = torch.log_softmax(logits.float(), dim=-1) if len(tree) > 1 else None
    path = [0]
    node = 0
    while kids[node]:
        want = argmax[node]
        nxt = next((c for c in kids[node] if tree.tokens[c] == want), None)
        if nxt is None and (relax_allowed is None or relax_allowed([tree.tokens[i] for i in path])):
            lp = logprobs[node]
            # a draft token past the logits' width (a tokenizer with more ids than the head) is never accepted
            known = [c for c in kids[node] if tree.tokens[c] < lp.shape[0]]
            best = max(known, key=lambda c: lp[tree.tokens[c]].item()) if known else None
            if best is not None and lp[tree.tokens[best]].item() - lp[want].item() >= log_tau:
                nxt = best
        if nxt is None:
            break
        path.append(nxt)
        node = nxt
    return Acceptance(path=path, bonus=argmax[node])
