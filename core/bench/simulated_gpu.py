"""A simulated GPU: the replay target's acceptance, every pass taking the time a GPU pass would.

No GPU is needed to ask what a GPU user's clock would read. ``SimulatedGpuTarget`` answers every
pass from the reference, as ``core.bench.replay.ReplayTarget`` does (so its acceptance, and its pass
counts with drafts computed first, are replay's), and spends, per pass, the seconds of a cost model:

    seconds = pass_ms / 1000 + token_ms / 1000 * tokens

``tokens`` is what the pass computes: rows x width for a verification pass (a batch's rows are
padded to its widest tree, and the padding is computed too), and for a prefill its image's patches
plus its prompt text (rows x the longest for a batch of crops, padded alike). A patch is 16 x 16
pixels, HunyuanOCR's (``../shared/realmodel/hunyuan_vl/processor_config.json``: patch 16, 2 x 2
merge, 512 x 512 to 2048 x 2048 pixels); its 0.4 B vision encoder runs on every patch, about the
0.5 B decoder's compute per token, so a patch is priced as a token.

Defaults, from public figures (docs/benchmarks.md, "Simulated GPU, drafting included", cites them):

* ``pass_ms`` 20: a 1 B document VLM's pass in transformers on a GPU. HunyuanOCR-1.5's report
  (arXiv 2607.04884) gives 34.85 s a page with transformers; a dense page is 1 000 - 2 000
  tokens, one pass each: 17 - 35 ms a pass. At these sizes a pass is bound by kernel launches and
  by reading the weights once, not by its width.
* ``token_ms`` 0.01: what one more token in a pass adds. A 0.5 B decoder computes about 1 GFLOP a
  token; an A100 does 312 TFLOP/s in bf16 at its peak, so 10 us a token is a third of the peak.

The time is spent in ``time.sleep``, which does not hold the GIL: a drafter thread runs beside the
decode as it would beside a GPU (on a GPU the Python side of a pass holds the GIL for part of the
pass; this simulation leaves it all to the drafter, which flatters drafting beside). What one sleep
overshoots (the scheduler wakes the thread late) is taken off the next, so a run's simulated seconds
are the model's, not the machine's. The replay's own work, finding each row's answer in the
reference (0.35-0.5 ms of CPU a pass on scans; rows are answered with ids, never logits as wide
as the vocabulary), stands for the model's arithmetic: it is done first and its wall taken off the
pass's sleep, so it is not paid twice.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from core import tuning
from core.bench.replay import ReplayTarget, ReplayTokenizer
from core.targets.base import BatchPrefill, Prefill

#: HunyuanOCR's image processor: 16 x 16 pixels a patch, images scaled into [512², 2048²] pixels.
PATCH_PIXELS = 16 * 16
MIN_PIXELS, MAX_PIXELS = 512 * 512, 2048 * 2048
#: Text tokens of a page or region prompt around the image (HunyuanOCR's parsing prompts: 40 - 70).
PROMPT_TOKENS = 64


@dataclass(frozen=True)
class GpuCostModel:
    """Seconds a pass takes: ``pass_ms`` + ``token_ms`` x tokens (module docstring), in milliseconds."""

    pass_ms: float = tuning.SIMULATED_GPU_PASS_MS
    token_ms: float = tuning.SIMULATED_GPU_TOKEN_MS

    def seconds(self, tokens: int) -> float:
        return (self.pass_ms + self.token_ms * tokens) / 1000.0

    @property
    def free(self) -> bool:
        """Passes take no time: the run measures the engine's own cost alone."""
        return self.pass_ms == 0.0 and self.token_ms == 0.0

    def describe(self) -> str:
        return f"{self.pass_ms:g} ms a pass + {self.token_ms:g} ms a token"


def prefill_tokens(image) -> int:
    """Tokens a prefill of ``image`` computes: its patches once scaled into the processor's pixel
    bounds, plus the prompt's text. ``None`` (a test's stand-in image): the smallest image."""
    pixels = image.width * image.height if image is not None else MIN_PIXELS
    return math.ceil(min(max(pixels, MIN_PIXELS), MAX_PIXELS) / PATCH_PIXELS) + PROMPT_TOKENS


class _Device:
    """Spends simulated seconds without holding the GIL; an overshoot is taken off the next pass."""

    def __init__(self):
        self.seconds = 0.0  # simulated seconds spent so far
        self._ahead = 0.0   # seconds slept beyond what was asked, still to take off

    def spend(self, seconds: float, computing: float = 0.0) -> None:
        """``seconds`` of the GPU's time, ``computing`` of them already spent finding the answer."""
        self.seconds += seconds
        left = seconds - computing
        if left <= 0.0:
            return  # the answer took longer than the model would have: the pass is over
        want = left - self._ahead
        if want <= 0.0:
            self._ahead = -want
            return
        t0 = time.perf_counter()
        time.sleep(want)
        self._ahead = max(0.0, time.perf_counter() - t0 - want)


class SimulatedGpuTarget(ReplayTarget):
    """Replay acceptance on a simulated GPU's clock (module docstring).

    Its passes are timed by the decoder like a real model's (``measures_pass_cost``), so proposal
    lengths and Stage 1's admission follow the measured cost as they would on a GPU; a free cost
    model (zero, zero) is not timed, so its pass counts are replay's."""

    def __init__(self, tokenizer: ReplayTokenizer, cost: GpuCostModel | None = None, prompt_length: int = 8):
        super().__init__(tokenizer, prompt_length)
        self.cost = cost or GpuCostModel()
        self.measures_pass_cost = not self.cost.free
        self.dtype = torch.bfloat16  # the model it stands for runs in bf16: the decoder builds its masks so
        self.device_clock = _Device()

    @property
    def device_seconds(self) -> float:
        """Simulated seconds of every pass so far."""
        return self.device_clock.seconds

    def prefill(self, image, kind: str = "page", label: str = "text", region: int | None = None) -> Prefill:
        return self._answer_in_pass(prefill_tokens(image), super().prefill, image, kind, label, region)

    def prefill_batch(self, requests) -> BatchPrefill:
        widest = max(prefill_tokens(r.image) for r in requests)
        return self._answer_in_pass(len(requests) * widest, super().prefill_batch, requests)

    def forward(self, tokens, positions, attention_mask, cache, rope_deltas=None, real=None,
                greedy: bool = False):
        return self._answer_in_pass(tokens.shape[0] * tokens.shape[1], super().forward, tokens, positions,
                                    attention_mask, cache, rope_deltas, real, greedy)

    def _answer_in_pass(self, tokens: int, answer, *args):
        """``answer(*args)``, computed inside the time of a pass over ``tokens`` tokens; the rest slept."""
        started = time.perf_counter()
        out = answer(*args)
        self.device_clock.spend(self.cost.seconds(tokens), time.perf_counter() - started)
        return out
