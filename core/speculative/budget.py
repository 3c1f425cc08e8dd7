"""Cost-aware proposal lengths: propose only as far as the measured price of a wider pass repays.

Verifying k draft tokens costs one forward pass over k + 1 tokens per row, and a batch's rows are
padded to the widest tree. On a GPU that price hardly depends on k (a pass is memory-bound), so long
proposals are free. On a CPU it grows with every token: the tiny test model takes 5 ms for one token
and 20 ms for 128 at 2000 tokens of context, and 100 ms for 16 rows of 32. Proposing 64 tokens
that are mostly rejected then makes HSD slower than plain decoding.

``PassCost`` fits the seconds of recent passes as ``a + b * tokens`` (tokens = rows x width),
forgetting old passes slowly (context grows, the machine's load changes). ``AcceptanceRate`` keeps
a row's chance ``alpha`` that a draft token is accepted once its parent was. A chain of k draft
tokens then yields ``1 + alpha + ... + alpha^k`` tokens on average (the bonus token always comes),
so the best k maximises tokens per second:

    (1 - alpha^(k+1)) / (1 - alpha)  /  (a + b * rows * (k + 1))

(the trade-off of Leviathan et al.'s speculative sampling, with the verifier's growing cost in place
of a draft model's). Worked example, a = 5 ms, b = 0.1 ms, the page alone (rows = 1):

    alpha = 0.40 -> k = 3   (1.62 tokens in 5.4 ms; plain decoding: 1 token in 5.1 ms)
    alpha = 0.98 -> k = 64  (37 tokens in 11.5 ms)
    b = 0 (a GPU) -> the longest budget, whatever alpha is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.tuning import (ACCEPTANCE_DECAY, ACCEPTANCE_PRIOR, CROP_SECONDS_KEEP, PASS_COST_FORGET,
                         PASSES_SAVED_PER_TOKEN, PROPOSAL_LENGTHS, REGION_WIDTH_PER_TOKEN)


class PassCost:
    """Seconds per forward pass as ``a + b * tokens``, fitted by least squares with forgetting, and
    the seconds a region crop's prefill takes (``add_crops``).

    ``b`` stays 0 (every length is as cheap as one token) until passes of different widths have
    been seen; the decoder does not time a target whose ``measures_pass_cost`` is False (the
    replay target, which stands for a GPU), so there it stays 0 for good.
    """

    def __init__(self, forget: float = PASS_COST_FORGET):
        self.forget = forget
        self._s = [0.0] * 5  # weighted sums: 1, x, y, xx, xy
        self.a, self.b = 0.0, 0.0
        self.passes = 0
        self.slope_measured = False  # True once passes of different widths gave ``b``
        self.crop_seconds: float | None = None  # prefill of one region crop (Stage 1), recent average
        self.width = 1  # tokens per row of the latest pass (a new page's first guess)

    def add_crops(self, crops: int, seconds: float) -> None:
        """A batch of ``crops`` region crops took ``seconds`` to prefill."""
        per = seconds / max(1, crops)
        self.crop_seconds = per if self.crop_seconds is None else CROP_SECONDS_KEEP * self.crop_seconds + (1.0 - CROP_SECONDS_KEEP) * per

    def add(self, tokens: int, seconds: float) -> None:
        x, y = float(tokens), float(seconds)
        f = self.forget
        s = self._s
        for i, v in enumerate((1.0, x, y, x * x, x * y)):
            s[i] = f * s[i] + v
        self.passes += 1
        n, sx, sy, sxx, sxy = s
        var = n * sxx - sx * sx
        if var > 1e-9 * max(1.0, n * sxx):  # widths differed: the slope is measurable
            self.b = max(0.0, (n * sxy - sx * sy) / var)
            self.slope_measured = True
        self.a = max(1e-6, (sy - self.b * sx) / n)

    @property
    def token_share(self) -> float:
        """``b / a``: what one more token in every row costs, as a share of a pass's fixed cost."""
        return self.b / self.a if self.a > 0 else 0.0


@dataclass
class AcceptanceRate:
    """A row's recent chance that a proposed token is accepted, given that its parent was.

    Each pass adds the draft tokens accepted and whether the walk then stopped at a rejection
    (a node with children, none of them the target's token). ``alpha = accepted / (accepted +
    rejections)``, both decayed per pass; it starts at ``prior`` as if from one pass's evidence.
    """

    prior: float = ACCEPTANCE_PRIOR
    decay: float = ACCEPTANCE_DECAY
    accepted: float = field(init=False)
    rejected: float = field(init=False)

    def __post_init__(self):
        self.accepted, self.rejected = self.prior, 1.0 - self.prior

    def add(self, accepted: int, rejected: bool) -> None:
        self.accepted = self.decay * self.accepted + accepted
        self.rejected = self.decay * self.rejected + (1.0 if rejected else 0.0)

    @property
    def alpha(self) -> float:
        return self.accepted / max(1e-9, self.accepted + self.rejected)


def best_length(alpha: float, token_share: float, rows: int, longest: int) -> int:
    """The proposal length (draft tokens, at least 1) with the most expected tokens per second.

    ``token_share``: ``PassCost.token_share`` (0 on a GPU-like target: returns ``longest``);
    ``rows``: rows in the batch (each pays for the widest row's length).
    """
    if token_share <= 0.0:
        return longest
    alpha = min(alpha, 0.999)
    per_token = token_share * max(1, rows)
    best, best_rate = 1, -1.0
    for k in PROPOSAL_LENGTHS:
        if k > longest:
            break
        rate = (1.0 - alpha ** (k + 1)) / (1.0 - alpha) / (1.0 + per_token * (k + 1))
        if rate > best_rate:
            best, best_rate = k, rate
    return best


def affordable_rows(token_share: float, width: int, limit: int) -> int:
    """How many rows may decode beside the main one (Stage 1 beside the page) when each pass is
    ``width`` tokens wide: as many as add at most one pass's fixed cost (``token_share`` 0: ``limit``)."""
    if token_share <= 0.0:
        return limit
    return max(0, min(limit, int(1.0 / (token_share * max(1, width)))))


def stage1_pays(draft_tokens: int | None, exact_text: bool, prefill_seconds: float, pass_seconds: float,
                token_seconds: float = 0.0) -> bool:
    """Whether verifying a region of ``draft_tokens`` on its crop (Stage 1) is likely to save the
    page more time than it costs. ``pass_seconds`` and ``token_seconds``: ``PassCost.a`` and ``.b``.
    ``exact_text``: the draft is the document's own text (a text layer), not a reading of pixels.
    ``draft_tokens`` None: a region without a draft, read from its crop alone; its length is unknown,
    so only whether a token of it pays at all is asked (valued as a reading's).

    What Stage 1 saves is page passes (``PASSES_SAVED_PER_TOKEN``), each worth its fixed cost only:
    the page still verifies every token the region row verified. What it costs is the crop's
    prefill and the width the region row adds to every pass it takes part in
    (``REGION_WIDTH_PER_TOKEN`` per token kept). On a GPU (``token_seconds`` about 0) a batched crop
    prefill costs little beside a pass. On a CPU it costs several passes, and where a token's width
    costs more than the share of a pass it saves, no region is long enough: a real-width model on
    two cores (hidden 1024, 121 k words, output head as in ``core.targets.cpu_head``) has ``a`` =
    50 ms and ``b`` = 4 ms, so neither exact regions (0.04 x 50 = 2 ms saved a token) nor OCR
    regions (8 ms saved, 32 ms spent) pay; the tiny test model (7 ms, 0.1 ms) gets crops for OCR
    regions of 79 tokens (a crop: 25 ms) and none for text-layer ones (0.3 ms saved, 0.8 ms spent)."""
    saved = PASSES_SAVED_PER_TOKEN["exact" if exact_text and draft_tokens else "reading"]
    per_token = saved * pass_seconds - REGION_WIDTH_PER_TOKEN * token_seconds
    if draft_tokens is None:
        return per_token > 0.0
    return draft_tokens * per_token >= prefill_seconds
