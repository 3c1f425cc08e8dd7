"""Verification (``core.speculative.verify``): the exact walk at tau = 1 and the relaxed margin rule."""

import torch

from core.speculative.tree import build_tree
from core.speculative.verify import verify_tree


def _logits_choosing(choices, vocab=16):
    out = torch.full((len(choices), vocab), -5.0)
    for i, c in enumerate(choices):
        out[i, c] = 5.0
    return out


def test_verify_accepts_matching_branch_and_returns_bonus():
    tree = build_tree(4, [([5, 6, 7], None), ([5, 8], None)])  # nodes 4,5,6,7,8
    # target wants: after 4 -> 5, after 5 -> 8, after 8 -> 9
    logits = _logits_choosing([5, 8, 0, 0, 9])
    acc = verify_tree(tree, logits)
    assert acc.path == [0, 1, 4]
    assert acc.bonus == 9
    assert acc.accepted_drafts == 2


def test_verify_rejects_everything():
    tree = build_tree(4, [([5, 6], None)])
    acc = verify_tree(tree, _logits_choosing([3, 0, 0]))
    assert acc.path == [0] and acc.bonus == 3


def test_relaxed_rule_accepts_close_second_but_not_in_math():
    tree = build_tree(4, [([5], None)])
    logits = torch.full((2, 16), -10.0)
    logits[0, 3] = 1.0
    logits[0, 5] = 0.9  # log p(5) - log p(3) = -0.1 >= log 0.75
    logits[1, 7] = 1.0
    assert verify_tree(tree, logits, tau=1.0).path == [0]
    assert verify_tree(tree, logits, tau=0.75).path == [0, 1]
    assert verify_tree(tree, logits, tau=0.75, relax_allowed=lambda toks: False).path == [0]


def test_relaxed_rule_never_accepts_a_token_past_the_logits_width():
    tree = build_tree(4, [([40], None), ([5], None)])  # 40: an id the 16-wide head has no logit for
    logits = torch.full((3, 16), -10.0)
    logits[0, 3] = 1.0
    logits[0, 5] = 0.9
    assert verify_tree(tree, logits, tau=0.75).path == [0, 2]
    only_wide = build_tree(4, [([40], None)])
    assert verify_tree(only_wide, logits[:2], tau=0.75).path == [0]


def test_inside_math():
    from core.speculative.mathmode import inside_math

    assert inside_math("The value $x + ")
    assert not inside_math("The value $x$ is")
    assert inside_math("$$\n\\frac{a}{")
    assert not inside_math("costs \\$5 and")
    assert inside_math("where \\(a")
    assert not inside_math("\\[ a \\] then")
    assert inside_math("\\begin{equation} x")


def _walk_by_children(tree, argmax):
    """The exact rule written plainly: from the root, the child holding the target's token."""
    kids, path, node = tree.children(), [0], 0
    while True:
        nxt = next((c for c in kids[node] if tree.tokens[c] == argmax[node]), None)
        if nxt is None:
            return path, argmax[node]
        path.append(nxt)
        node = nxt


def test_greedy_verification_walks_the_plain_rule_on_random_trees():
    import random

    from core.speculative.verify import verify_greedy

    rng = random.Random(11)
    for _ in range(200):
        conts = [([rng.randrange(4) for _ in range(rng.randint(1, 10))], None) for _ in range(rng.randint(0, 4))]
        tree = build_tree(rng.randrange(4), conts, max_nodes=rng.choice([2, 8, 32]))
        argmax = [rng.randrange(4) for _ in range(len(tree) + 3)]
        acc = verify_greedy(tree, argmax)
        assert (acc.path, acc.bonus) == _walk_by_children(tree, argmax)


def test_greedy_verification_takes_the_first_of_two_children_with_one_token():
    from core.speculative.tree import DraftTree
    from core.speculative.verify import verify_greedy

    tree = DraftTree([4, 5, 5, 6], [-1, 0, 0, 2], [0, 1, 1, 2], [None] * 4)  # not build_tree's: 5 twice under 0
    assert verify_greedy(tree, [5, 9, 6, 1]).path == [0, 1]
