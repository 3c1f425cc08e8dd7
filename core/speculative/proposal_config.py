"""How proposals are made: the lengths and widths of the draft trees every proposer builds."""

from __future__ import annotations

from dataclasses import dataclass

from core import tuning


@dataclass
class ProposalConfig:
    """How proposals are made; the defaults and what each means are in ``core.tuning``."""

    min_ngram: int = tuning.MIN_NGRAM
    max_ngram: int = tuning.MAX_NGRAM
    max_chain: int = tuning.MAX_CHAIN
    max_budget: int = tuning.MAX_BUDGET    # max_nodes caps a chain at max_nodes - 1
    max_nodes: int = tuning.MAX_NODES
    max_branches: int = tuning.MAX_BRANCHES
    fallback_depth: int = tuning.FALLBACK_DEPTH
    fallback_branches: int = tuning.FALLBACK_BRANCHES
    cost_aware: bool = True    # shorten proposals where measured pass cost grows with width (CPU)
