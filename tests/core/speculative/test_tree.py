"""Draft trees (``core.speculative.tree``): continuations merged into one flattened prefix tree."""

import torch

from core.speculative.tree import ancestor_masks, build_tree, root_only


def test_the_docstring_example():
    tree = build_tree(4, [([5, 6, 7], (0, 10)), ([5, 8], (1, 3))])
    assert tree.tokens == [4, 5, 6, 7, 8]
    assert tree.parents == [-1, 0, 1, 2, 1]
    assert tree.depths == [0, 1, 2, 3, 2]
    # the shared node keeps the first continuation's origin; each later node counts along its draft
    assert tree.origins == [None, (0, 10), (0, 11), (0, 12), (1, 4)]
    assert not tree.is_chain and build_tree(4, [([5, 6], None)]).is_chain


def test_root_only_is_plain_decoding():
    tree = root_only(9)
    assert len(tree) == 1 and tree.is_chain and tree.children() == [[]]


def test_tree_respects_node_limit():
    conts = [([i, i + 1, i + 2], (0, 0)) for i in range(0, 300, 3)]
    tree = build_tree(0, conts, max_nodes=20)
    assert len(tree) == 20
    assert all(p < i for i, p in enumerate(tree.parents))


def test_ancestor_mask():
    tree = build_tree(4, [([5, 6, 7], None), ([5, 8], None)])
    assert tree.tokens == [4, 5, 6, 7, 8]
    m = ancestor_masks([tree], len(tree))[0]
    assert m[3].tolist() == [True, True, True, True, False]
    assert m[4].tolist() == [True, True, False, False, True]


def test_ancestor_mask_of_deep_and_wide_trees_is_each_nodes_path():
    import random

    rng = random.Random(5)
    for _ in range(20):
        conts = [([rng.randrange(6) for _ in range(rng.randint(1, 40))], None) for _ in range(rng.randint(1, 6))]
        tree = build_tree(0, conts, max_nodes=rng.choice([8, 64, 128]))
        want = []
        for i in range(len(tree)):
            row, node = [False] * len(tree), i
            while node >= 0:
                row[node] = True
                node = tree.parents[node]
            want.append(row)
        assert ancestor_masks([tree], len(tree))[0].tolist() == want


def _tree_one_token_at_a_time(root, continuations, max_nodes):
    """``build_tree``'s rule written plainly: every token walked or added on its own (the reference)."""
    tokens, parents, depths, origins = [root], [-1], [0], [None]
    for cont, origin in continuations:
        node = 0
        for k, tok in enumerate(cont):
            nxt = next((i for i in range(1, len(tokens)) if parents[i] == node and tokens[i] == tok), None)
            if nxt is None:
                if len(tokens) >= max_nodes:
                    break
                tokens.append(tok)
                parents.append(node)
                depths.append(depths[node] + 1)
                origins.append(None if origin is None else (origin[0], origin[1] + k))
                nxt = len(tokens) - 1
            node = nxt
    return tokens, parents, depths, origins


def test_build_tree_matches_the_plain_rule_on_random_continuations():
    import random

    rng = random.Random(3)
    for _ in range(2000):
        conts = [([rng.randrange(4) for _ in range(rng.randrange(0, 9))],
                  None if rng.random() < 0.3 else (rng.randrange(5), rng.randrange(9)))
                 for _ in range(rng.randrange(0, 7))]
        limit = rng.randrange(1, 24)
        tree = build_tree(7, conts, limit)
        assert (tree.tokens, tree.parents, tree.depths, tree.origins) == _tree_one_token_at_a_time(7, conts, limit)


def test_a_later_continuation_keeps_its_fork_where_the_first_fills_the_tree():
    first = list(range(10, 40))                # 30 tokens
    other = first[:5] + list(range(60, 85))      # leaves it early, runs long
    misread = first[:20] + [99, 98, 97]          # one letter read the other way, deep inside
    conts = [(first, None), (other, None), (misread, None)]
    plain = build_tree(0, conts, max_nodes=40)
    assert 99 not in plain.tokens                # the second took what the first left
    forked = build_tree(0, conts, max_nodes=40, fork_head=2)
    assert len(forked) == 40 and forked.tokens[:31] == [0] + first
    assert {60, 61, 99, 98} <= set(forked.tokens)  # every fork's first tokens, then the rest in order
    assert all(p < i for i, p in enumerate(forked.parents) if i)


def test_ancestor_masks_of_a_batch_pad_every_tree_to_the_width_with_rows_that_see_themselves():
    trees = [build_tree(4, [([5, 6, 7], None), ([5, 8], None)]), build_tree(1, []), build_tree(2, [([3], None)])]
    for width in (5, 9, 17):
        masks = ancestor_masks(trees, width)
        assert masks.shape == (3, width, width)
        for tree, m in zip(trees, masks):
            n = len(tree)
            assert torch.equal(m[:n, :n], ancestor_masks([tree], n)[0])
            assert not m[:n, n:].any() and not m[n:, :n].any()
            assert torch.equal(m[n:, n:], torch.eye(width - n, dtype=torch.bool))


def _paths_mask(tree, width):
    """Each node sees itself and its ancestors; padding rows see themselves (the definition)."""
    want = [[False] * width for _ in range(width)]
    for i in range(width):
        node = i if i < len(tree) else None
        if node is None:
            want[i][i] = True
        while node is not None and node >= 0:
            want[i][node] = True
            node = tree.parents[node]
    return want


def test_a_chains_mask_is_its_lower_triangle_beside_trees_in_one_batch():
    chains = [build_tree(7, [(list(range(n)), None)]) for n in (0, 1, 7, 8, 15, 63)]
    assert all(t.is_chain for t in chains)
    forked = build_tree(4, [([5, 6, 7], None), ([5, 8], None)])
    assert not forked.is_chain
    for width in (64, 65, 130):
        masks = ancestor_masks(chains + [forked], width)
        for tree, m in zip(chains + [forked], masks):
            assert m.tolist() == _paths_mask(tree, width)


def test_a_trees_child_lookup_names_each_nodes_children_by_token():
    import random

    rng = random.Random(3)
    for _ in range(30):
        conts = [([rng.randrange(5) for _ in range(rng.randint(1, 12))], None) for _ in range(rng.randint(1, 5))]
        tree = build_tree(0, conts, max_nodes=rng.choice([4, 16, 64]))
        child = tree.child()
        for node, kids in enumerate(tree.children()):
            assert {tree.tokens[k]: k for k in kids} == {t: c for (p, t), c in child.items() if p == node}
