"""Stop rules shared by every decoding mode, so that AR and HSD stop at the same token.

Speculative steps append several tokens at once; a rule that only looked at the end of the output
would stop HSD later than AR. Each rule therefore returns the exact length at which plain
one-token-at-a-time decoding would have stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RepetitionGuard:
    """Detects degenerate loops: the output repeating a block of at most ``max_period`` tokens for
    ``min_run`` consecutive tokens. Long enough that real tables of empty cells pass."""

    max_period: int = 64
    min_run: int = 256

    def first_trigger(self, tokens: list[int], new_from: int) -> int | None:
        """Smallest length ``L > new_from`` such that ``tokens[:L]`` ends in a loop, or None.

        Only lengths beyond ``new_from`` are considered: shorter prefixes were checked already.
        """
        n = len(tokens)
        if n < self.min_run + 1:
            return None
        start = max(0, new_from - self.min_run - self.max_period)
        a = np.asarray(tokens[start:], dtype=np.int64)
        m = len(a)
        idx = np.arange(m)
        best: int | None = None
        for p in range(1, min(self.max_period, m - 1) + 1):
            eq = np.zeros(m, dtype=bool)
            eq[p:] = a[p:] == a[:-p]
            last_break = np.maximum.accumulate(np.where(eq, -1, idx))
            run = idx - last_break  # run[i]: how many eq in a row end at i
            hit = np.flatnonzero(run == self.min_run)
            if hit.size:
                length = start + int(hit[0]) + 1
                if length > new_from and (best is None or length < best):
                    best = length
        return best


@dataclass
class StopRule:
    """When decoding ends: a stop token, ``max_new_tokens``, or a repetition loop."""

    eos_token_ids: frozenset[int]
    max_new_tokens: int = 4096
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
