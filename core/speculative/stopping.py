"""Stop rules shared by every decoding mode, so that AR and HSD stop at the same token.

Speculative steps append several tokens at once; a rule that only looked at the end of the output
would stop HSD later than AR. Each rule therefore returns the exact length at which plain
one-token-at-a-time decoding would have stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.tuning import MAX_NEW_TOKENS, REPETITION_PERIOD, REPETITION_RUN


@dataclass
class RepetitionGuard:
    """Detects degenerate loops: the output repeating a block of at most ``max_period`` tokens for
    ``min_run`` consecutive tokens. Long enough that real tables of empty cells pass."""

    max_period: int = REPETITION_PERIOD
    min_run: int = REPETITION_RUN

    def first_trigger(self, tokens: list[int], new_from: int) -> int | None:
        """Smallest length ``L > new_from`` such that ``tokens[:L]`` ends in a loop, or None.

        Only lengths beyond ``new_from`` are considered: shorter prefixes were checked already.
        Every period is checked at once (it runs after every pass of every row, AR's included):
        ``eq[p - 1, i]`` says token ``i`` repeats the one ``p`` before it, and a loop ends at the
        first ``i`` where ``min_run`` of those hold in a row.
        """
        n = len(tokens)
        if n < self.min_run + 1:
            return None
        # Every loop ending at a length in [lo, hi] covers tokens[hi - min_run : lo], which is then
        # periodic with the loop's period (and holds at most that many distinct tokens): ordinary
        # text and tables are ruled out by a set and a few list comparisons per stretch of half a
        # run of lengths (a pass that accepted hundreds of tokens takes a few stretches). Only the
        # periods whose last token repeats are compared: a table's few distinct tokens pass the
        # set, and comparing every period's copies cost ten times as much.
        step = max(1, self.min_run // 2)
        periods = range(1, self.max_period + 1)
        for lo in range(new_from + 1, n + 1, step):
            hi = min(lo + step - 1, n)
            covered = tokens[max(0, hi - self.min_run):lo]
            m, last = len(covered), covered[-1]
            if len(set(covered)) <= self.max_period and (m <= self.max_period or any(
                    covered[p:] == covered[:-p] for p in periods if covered[m - 1 - p] == last)):
                break
        else:
            return None
        start = max(0, new_from - self.min_run - self.max_period)
        a = np.asarray(tokens[start:], dtype=np.int64)
        m = len(a)
        periods = np.arange(1, min(self.max_period, m - 1) + 1)
        back = np.arange(m)[None, :] - periods[:, None]  # (P, m): index p tokens before
        eq = (back >= 0) & (a[None, :] == a[np.maximum(back, 0)])
        runs = np.zeros((len(periods), m + 1), dtype=np.int32)
        np.cumsum(eq, axis=1, out=runs[:, 1:])
        # a run of exactly min_run ends at i: the min_run before hold, the one before them does not
        i = np.arange(self.min_run - 1, m)
        full = runs[:, i + 1] - runs[:, i + 1 - self.min_run] == self.min_run
        before = i - self.min_run
        broken = np.ones_like(full)
        inside = before >= 0
        broken[:, inside] = ~eq[:, before[inside]]
        first = full & broken
        has = first.any(axis=1)
        if not has.any():
            return None
        lengths = start + i[first.argmax(axis=1)[has]] + 1  # each period's first loop
        lengths = lengths[lengths > new_from]
        return int(lengths.min()) if lengths.size else None


@dataclass
class StopRule:
    """When decoding ends: a stop token, ``max_new_tokens``, or a repetition loop."""

    eos_token_ids: frozenset[int]
    max_new_tokens: int = MAX_NEW_TOKENS
    repetition: RepetitionGuard | None = None

    def cut(self, tokens: list[int], new_from: int) -> tuple[int, str] | None:
        """Check ``tokens`` (the output so far, of which ``tokens[new_from:]`` are new).

        Returns ``(length, reason)`` to truncate the output to and stop, or None to go on.
        Reasons: "eos", "max_new_tokens", "repetition".
        """
        candidates: list[tuple[int, str]] = []
        for i in range(new_from, len(tokens)):
            if tokens[i] in self.eos_token_ids:
                candidates.append((i, "eos"))
                break
        if len(tokens) >= self.max_new_tokens:
            candidates.append((self.max_new_tokens, "max_new_tokens"))
        if self.repetition is not None:
            rep = self.repetition.first_trigger(tokens, new_from)
            if rep is not None:
                candidates.append((rep, "repetition"))
        return min(candidates) if candidates else None
