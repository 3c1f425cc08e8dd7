"""What the engine and the decoder need of a target model, declared (``typing.Protocol``).

``core.targets.base.Target`` (a loaded VLM) is the real one; the benchmark's replay targets
(``core.bench.replay``) and the tests' stand-ins are others. Nothing is looked up by ``getattr``:
a stand-in declares every member below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

    from core.targets.base import BatchPrefill, Prefill, PrefillRequest
    from core.targets.profiles.base import Profile


@runtime_checkable
class DecodeTarget(Protocol):
    """What ``core.speculative.decode.SpeculativeDecoder`` calls."""

    pad_token_id: int
    dtype: "torch.dtype"
    #: Whether the decoder should time passes and price wider ones (``core.speculative.budget``).
    #: False for a target that stands for a GPU without being one (the replay target): its passes
    #: take no time, so their cost would read as zero anyway, but the timing would be noise.
    measures_pass_cost: bool
    #: ``clock() -> seconds``: what the target's passes and crop prefills are timed by: the
    #: wall-clock (``time.perf_counter``) for a model, a clock of its own for a target that stands
    #: for a device (``tools.bench.timeline``'s virtual one).
    clock: Callable[[], float]
    #: The fast engine's static cache and compiled passes (``core.targets.fast_pass.FastPasses``)
    #: where ``--engine fast`` loaded them; None: the eager engine (and the replay targets).
    fast_passes: "object | None"

    def forward(self, tokens: "torch.Tensor", positions: "torch.Tensor", attention_mask: "torch.Tensor",
                cache, rope_deltas: "torch.Tensor", real: "torch.Tensor | None" = None,
                greedy: bool = False) -> "torch.Tensor":
        """Logits ``(B, q, V)`` of ``q`` new tokens per row appended to ``cache`` (see ``Target.forward``);
        with ``greedy``, only their argmax ids ``(B, q)`` long: all that verification at tau = 1 reads,
        which a target that stands for a model (the replay targets) answers without building logits."""
        ...


@runtime_checkable
class PageTarget(DecodeTarget, Protocol):
    """What ``core.engine.Engine`` calls besides the decoder's members."""

    device: "torch.device"
    eos_token_ids: frozenset[int]
    #: The model family's prompts, output format and reading mode (``core.targets.profiles``);
    #: None for a stand-in of no family (a replayed output): every family's page style applies and
    #: the output is taken as written.
    profile: "Profile | None"
    #: Width of the logits, the bound of a valid token id (None: the ids have no fixed bound, as
    #: with a stand-in whose vocabulary grows with the text it replays).
    vocab_size: "int | None"

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids) -> str: ...

    def prefill(self, image, kind: str = "page", label: str = "text", region: int | None = None) -> "Prefill": ...

    def prefill_batch(self, requests: "list[PrefillRequest]") -> "BatchPrefill": ...


def clock_of(target: DecodeTarget) -> Callable[[], float]:
    """What ``target``'s passes are timed by (``DecodeTarget.clock``)."""
    return target.clock
