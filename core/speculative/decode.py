"""The speculative decoding loop, batched over independent sequences.

Each row of the batch is one sequence (a region crop in Stage 1, the page in Stage 2, or plain AR
decoding when its draft index is empty). One loop iteration is one forward pass for all active
rows: every row proposes a draft tree after its current output, the trees are padded to one width
``q`` and verified together, each row keeps its accepted path and the target's bonus token.

Where the rows' keys and values live is the engine's (``core.speculative.row_caches``): the fast
engine's static cache, a slot per row, the accepted paths moved into place; or the eager engine's
``DynamicCache``, one for the batch, rejected nodes left as holes the mask blocks.

Proposal lengths follow acceptance (``_next_budget``) and, where the decoder is given a ``PassCost``,
the measured price of wider passes (``core.speculative.budget``): long on a GPU, short on a CPU
whenever the drafts are being rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from core.errors import CancelledError
from core.targets.protocol import clock_of
from core.speculative.budget import AcceptanceRate, PassCost, affordable_rows, best_length
from core.speculative.proposal_config import ProposalConfig
from core.speculative.proposers import Proposer
from core.speculative.row_caches import row_caches, select_rows
from core.speculative.stopping import StopRule
from core.speculative.verify import verify_greedy, verify_tree
from core.tuning import BATCH_BUDGETS, COMPACT_HOLE_FRACTION, GIVE_UP_PATIENCE


@dataclass
class RowStats:
    """What happened to one row: passes it took part in, draft tokens proposed and accepted."""

    forward_passes: int = 0
    proposed: int = 0
    accepted: int = 0
    tokens_per_pass: list[int] = field(default_factory=list)
    tree_passes: int = 0  # passes whose proposal branched (a tree, not a chain)


@dataclass
class DecodeRow:
    """One sequence being decoded.

    output:  tokens decided so far (in the cache), the prompt excluded.
    origins: per output token, the draft position ``(draft_id, index)`` it was accepted from,
             or None where the target produced it itself.
    root:    the target's latest token, decided but not yet in the cache.
    stats:   the row's counters (``RowStats``).
    """

    proposer: Proposer
    stop: StopRule
    length: int
    rope_delta: int
    root: int
    output: list[int] = field(default_factory=list)
    origins: list[tuple[int, int] | None] = field(default_factory=list)
    done: bool = False
    stop_reason: str = ""
    stats: RowStats = field(default_factory=RowStats)
    budget: int = 0     # longest continuation to propose next (0: the config's max_chain)
    rate: AcceptanceRate = field(default_factory=AcceptanceRate)  # for cost-aware lengths (``budget``)
    # Stage 1 only (its output is a draft, never returned): stop early once the last ``patience``
    # passes gained fewer than ``give_up_below`` tokens each on average; the drafts are not helping.
    give_up_below: float = 0.0
    patience: int = GIVE_UP_PATIENCE
    tag: object = None  # caller's handle (region index, ...)
    # The row the batch exists for (Stage 2's page): once it is done, the other rows stop too.
    ends_batch: bool = False

    def _finish_if_stopped(self, new_from: int) -> None:
        decided = self.output + [self.root]
        cut = self.stop.cut(decided, new_from)
        if cut is not None:
            length, self.stop_reason = cut
            self.output = decided[:length]
            self.origins = (self.origins + [None])[:length]
            self.done = True


#: Newcomers to a batch: their rows, their merged prefill cache and its ``valid`` columns.
Admission = "tuple[list[DecodeRow], object, torch.Tensor]"


class DecodePolicy:
    """What the caller decides while the decoder runs: which rows join the batch, and what to do
    after each pass (stream text, refine drafts). The default admits nothing and does nothing."""

    def admit(self, live: list[DecodeRow]) -> "Admission | None":
        """Asked before the first pass and after every pass, with the rows still live: newcomers
        ``(rows, cache, valid)`` to add to the batch, or None."""
        return None

    def after_pass(self, live: list[DecodeRow], gained: list[int]) -> None:
        """Called after every pass with the rows that took part and the tokens each gained."""


class SpeculativeDecoder:
    """Runs rows to completion with draft-tree verification (q = 1 everywhere is plain AR).

    ``target``: a ``core.targets.protocol.DecodeTarget`` (``forward``, ``pad_token_id``, ``dtype``,
    ``measures_pass_cost``).
    """

    def __init__(
        self,
        target,
        proposal: ProposalConfig | None = None,
        tau: float = 1.0,
        relax_allowed: Callable[[list[int]], bool] | None = None,
        should_cancel: Callable[[], bool] | None = None,
        compact_ratio: float = COMPACT_HOLE_FRACTION,
        cost: PassCost | None = None,
    ):
        self.target = target
        self.proposal = proposal or ProposalConfig()
        self.tau = tau
        self.relax_allowed = relax_allowed
        self.should_cancel = should_cancel or (lambda: False)
        self.compact_ratio = compact_ratio
        self.forward_passes = 0
        # Measured pass cost (shared by the engine across pages); None, or a target that stands for
        # a GPU (``measures_pass_cost`` False), proposes the adaptive budgets alone.
        self.cost = cost if target.measures_pass_cost else None
        # What passes are timed by: the wall-clock, or a simulation's own clock (``clock`` on the target).
        self.clock = clock_of(target)

    def run(self, rows: list[DecodeRow], cache, valid: torch.Tensor,
            policy: DecodePolicy | None = None) -> list[DecodeRow]:
        """Decode until every row is done.

        cache: the merged prefill cache, batch ``len(rows)``; valid: (B, T) bool, its real columns.
        policy: admits newcomers before the first pass and after every pass (no longer once an
        ``ends_batch`` row is done) and is told about every pass (``DecodePolicy``). Rows are
        returned in the order they were given, newcomers not included.
        """
        policy = policy or DecodePolicy()
        live, cache, valid = _drop_done(rows, cache, valid)
        kv = row_caches(self.target, live, cache, valid, self.compact_ratio)
        try:
            if not any(r.ends_batch for r in rows if r.done):
                live, kv = _admit(policy, live, kv)
            while live:
                live, kv = self._pass(live, kv, policy)
                if not any(r.ends_batch for r in rows if r.done):
                    live, kv = _admit(policy, live, kv)
                kv.tidy()
        finally:
            kv.close()
        return rows

    def _pass(self, live: list[DecodeRow], kv, policy: DecodePolicy):
        """One forward pass for the ``live`` rows: propose, verify, keep each row's accepted path.
        Returns the rows still live and their caches."""
        if self.should_cancel():
            raise CancelledError("cancelled")
        # Rows are padded to the widest tree, so the long budgets shrink as the batch grows:
        # about BATCH_BUDGETS * max_budget tokens per pass in all, never below max_chain per row.
        p = self.proposal
        cap = max(p.max_chain, min(p.max_budget, BATCH_BUDGETS * p.max_budget // len(live)))
        trees = [r.proposer.propose(r.output, r.root, self._length(r, min(cap, r.budget or p.max_chain), len(live)))
                 for r in live]
        if not kv.fits(trees):
            kv = kv.to_eager()  # the static buffer's end, or a tree wider than any width
        t0 = self.clock()
        # At tau = 1 verification reads the argmax alone: the target answers ids, not logits.
        greedy = self.tau >= 1.0
        out = kv.forward(live, trees, greedy)
        q = out.shape[1]
        ids = out.tolist() if greedy else None  # one transfer for the batch
        gained = []
        for b, (row, tree) in enumerate(zip(live, trees)):
            if greedy:
                acc = verify_greedy(tree, ids[b])
            else:
                relax = None
                if self.relax_allowed is not None:
                    relax = lambda toks, ctx=row.output: self.relax_allowed(ctx + toks)  # noqa: E731
                acc = verify_tree(tree, out[b, : len(tree)], self.tau, relax)
            kv.accept(b, acc.path)
            gained.append(self._keep_path(row, tree, acc))
        kv.end_pass()
        if self.cost is not None:  # verification read the pass's output: it is over, also on a GPU
            self.cost.add(len(live) * q, self.clock() - t0)
            self.cost.width = q  # also the next page's first guess
        if any(r.done and r.ends_batch for r in live):
            for r in live:
                if not r.done:
                    r.done, r.stop_reason = True, "superseded"
        self.forward_passes += 1
        policy.after_pass(live, gained)
        keep = [b for b, r in enumerate(live) if not r.done]
        kv.keep(keep)
        return [live[b] for b in keep], kv

    def _keep_path(self, row: DecodeRow, tree, acc) -> int:
        """Row ``row`` takes its verified path ``acc`` of ``tree``: its output, counters, next
        budget and whether it is done. Returns the tokens it gained."""
        if len(tree) > 1:
            row.rate.add(acc.accepted_drafts, acc.path[-1] in tree.parents)  # stopped at a rejection
        before = len(row.output)
        row.output.extend(tree.tokens[i] for i in acc.path)
        row.origins.extend([None] + [tree.origins[i] for i in acc.path[1:]])
        row.length += len(acc.path)
        row.root = acc.bonus
        stats = row.stats
        stats.forward_passes += 1
        stats.proposed += len(tree) - 1
        stats.accepted += acc.accepted_drafts
        stats.tokens_per_pass.append(len(acc.path))
        stats.tree_passes += not tree.is_chain
        row.budget = self._next_budget(row, tree, acc.accepted_drafts)
        row._finish_if_stopped(before)
        if not row.done and row.give_up_below and len(stats.tokens_per_pass) >= row.patience:
            recent = stats.tokens_per_pass[-row.patience:]
            if sum(recent) < row.give_up_below * row.patience:
                row.done, row.stop_reason = True, "low_acceptance"
        return len(row.output) - before

    def _length(self, row: DecodeRow, budget: int, rows: int) -> int:
        """``budget``, shortened where the measured cost of wider passes outweighs what this row's
        acceptance rate is likely to gain (``core.speculative.budget``)."""
        if self.cost is None:
            return budget
        return min(budget, best_length(row.rate.alpha, self.cost.token_share, rows, budget))

    def affordable_rows(self, limit: int) -> int:
        """Rows that may decode beside the batch's main row at the latest pass width (``limit``
        where passes are not timed or width is free)."""
        if self.cost is None:
            return limit
        return affordable_rows(self.cost.token_share, self.cost.width, limit)

    def _next_budget(self, row: DecodeRow, tree, accepted: int) -> int:
        """Double the length after a pass that accepted its deepest continuation in full (up to
        ``max_budget``): the deepest may be shorter than the budget where other continuations
        took the tree's nodes, and it ran true all the same. Go back to ``max_chain`` after a
        partial success, where the drafts left the output. A proposal rejected whole leaves the
        length as it was: it says nothing of how far the next draft runs, and where a wider pass
        costs more (a CPU) the cost rule shortens proposals (``_length``)."""
        current = row.budget or self.proposal.max_chain
        longest = max(tree.depths)
        if longest and accepted == longest:
            return min(self.proposal.max_budget, 2 * current)  # the draft runs true: reach further
        return self.proposal.max_chain if accepted else current


def _admit(policy: DecodePolicy, live: list[DecodeRow], kv):
    """Ask the policy for newcomers and add those not done at once to the batch and its caches."""
    extra = policy.admit(live)
    if extra is None:
        return live, kv
    new_live, new_cache, new_valid = _drop_done(*extra)
    if not new_live:
        return live, kv
    return live + new_live, kv.join(new_live, new_cache, new_valid)


def _drop_done(rows: list[DecodeRow], cache, valid: torch.Tensor):
    """Finish rows that are done before their first pass (a stop token at once) and drop them."""
    for row in rows:
        row._finish_if_stopped(0)
    keep = [i for i, r in enumerate(rows) if not r.done]
    if len(keep) < len(rows):
        valid = select_rows(cache, valid, keep)
    return [rows[i] for i in keep], cache, valid
