"""The document's earlier pages as a draft (``OutputHistory``)."""

from core.speculative.history import OutputHistory
from core.speculative.proposal_config import ProposalConfig
from core.speculative.page_drafts import PageDrafts


def _codec():
    """Characters as tokens: ord / chr."""
    return (lambda s: [ord(c) for c in s]), (lambda ids: "".join(chr(i) for i in ids))


def test_a_later_page_is_proposed_what_an_earlier_page_wrote():
    encode, decode = _codec()
    history = OutputHistory()
    history.add_page(encode("| item | qty |\n|------|-----|\n| spam | 42 |\n"))
    drafts = PageDrafts([encode("eggs 451")], ["eggs 451"], encode, decode, ProposalConfig(), history=history)
    out = encode("| item | q")
    tree = drafts.proposer.propose(out[:-1], out[-1], 32)
    assert decode(tree.tokens[1:12]) == "ty |\n|-----"
    assert tree.origins[1] is None  # from no region of this page


def test_without_history_nothing_is_proposed_there():
    encode, decode = _codec()
    drafts = PageDrafts([encode("eggs 451")], ["eggs 451"], encode, decode, ProposalConfig())
    out = encode("| item | q")
    assert len(drafts.proposer.propose(out[:-1], out[-1], 32)) == 1


def test_only_the_latest_occurrences_are_looked_up():
    history = OutputHistory(recent=2)
    for k in range(5):
        history.add_page([1, 2, 3, 10 + k])
    assert [history.continuation(h, 1) for h in history.hits((1, 2, 3))] == [[13], [14]]


def test_a_long_history_keeps_its_recent_half():
    history = OutputHistory(max_tokens=100)
    for k in range(30):
        history.add_page([k] * 10)
    assert len(history) <= 100
    assert history.drafts[0][-10:] == [29] * 10
    assert history.hits((29, 29, 29))  # the kept tokens are indexed
    assert not history.hits((0, 0, 0))  # the dropped ones are not


def test_a_small_tree_still_holds_every_proposers_head():
    """With few nodes to spend (drafts have been failing), the first proposer's long continuation
    does not crowd out the others: each gets its first tokens into the tree."""
    from core.speculative.proposers import UnionProposal
    from core.speculative.tree import build_tree

    class Fixed:
        def __init__(self, cont):
            self.cont = cont

        def propose(self, output, root, budget):
            return build_tree(root, [(self.cont[:budget], None)])

    union = UnionProposal([Fixed(list(range(1, 9))), Fixed(list(range(11, 19))), Fixed(list(range(21, 29)))],
                          max_nodes=128)
    tree = union.propose([], 0, 8)  # at most 2 * 8 + 1 nodes
    assert len(tree) == 17
    assert {1, 11, 21} <= set(tree.tokens)
    assert tree.tokens[1:5] == [1, 2, 3, 4]  # the first proposer's head comes first
