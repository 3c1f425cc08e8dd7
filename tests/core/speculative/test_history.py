"""The document's earlier pages as a draft (``OutputHistory``)."""

from core.speculative.history import OutputHistory
from core.speculative.matching import ProposalConfig
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
