"""The target VLM as the speculative decoder sees it: a prefill and a masked multi-token forward.

``Target.prefill`` encodes the image once (the image never appears again) and returns a KV cache
holding the whole prompt. ``Target.forward`` then appends any number of new tokens per row, with
explicit positions and an explicit additive attention mask, so that the caller can verify a chain or
a flattened draft tree, over a batch of rows whose caches hold left padding or holes.

Both run under ``torch.no_grad`` rather than ``inference_mode``: inference-mode tensors refuse later
in-place edits outside that mode, and the caller edits caches between calls.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from core.targets.cpu_head import greedy_ids, real_positions_only
from core.targets.profiles.base import Profile


@dataclass
class Prefill:
    """The prompt (image + request) of one sequence, encoded.

    ``cache`` holds ``length`` columns for batch 1. The text position of logical index ``i`` (``i >=
    length`` for generated tokens) is ``i + rope_delta``. ``logits`` ``(V,)`` float32 predict the first
    token after the prompt.
    """

    cache: DynamicCache
    length: int
    rope_delta: int
    logits: torch.Tensor


@dataclass
class PrefillRequest:
    """One sequence to prefill: an image with the page request or a region request for ``label``.
    ``region`` is the region's index on the page (stand-in targets use it; see ``Target.prefill``)."""

    image: object
    kind: str = "page"
    label: str = "text"
    region: int | None = None


@dataclass
class BatchPrefill:
    """Several prompts encoded into one left-padded batch, ready for ``SpeculativeDecoder.run``.

    ``cache``: ``B`` rows of ``T`` columns; ``valid`` ``(B, T)`` bool marks each row's real columns
    (left padding is False). Per row: ``lengths`` (prompt tokens), ``rope_deltas`` and ``logits``
    ``(B, V)`` float32 predicting the first generated token. ``passes``: the forward calls it took.
    """

    cache: DynamicCache
    valid: torch.Tensor
    lengths: list[int]
    rope_deltas: list[int]
    logits: torch.Tensor
    passes: int


def stack_prefills(prefills: list[Prefill], passes: int | None = None) -> BatchPrefill:
    """Merge single prefills into one left-padded batch (``passes`` defaults to one per prefill)."""
    from core.targets.kv import merge_caches_left_padded

    cache, pad_counts = merge_caches_left_padded([p.cache for p in prefills])
    T = int(cache.get_seq_length())
    device = prefills[0].logits.device
    valid = torch.arange(T, device=device)[None, :] >= pad_counts.to(device)[:, None]
    return BatchPrefill(cache=cache, valid=valid, lengths=[p.length for p in prefills],
                        rope_deltas=[p.rope_delta for p in prefills],
                        logits=torch.stack([p.logits for p in prefills]),
                        passes=len(prefills) if passes is None else passes)


def processor_min_pixels(processor) -> int | None:
    """The image processor's lower pixel bound (``size.shortest_edge`` counts pixels in the Qwen-style
    processors all five families use), or None where it names none."""
    image_processor = getattr(processor, "image_processor", None)
    value = getattr(image_processor, "min_pixels", None)
    size = getattr(image_processor, "size", None)
    if value is None and size is not None:
        value = size.get("shortest_edge") if isinstance(size, dict) else getattr(size, "shortest_edge", None)
    return int(value) if value else None


class Target:
    """A loaded document VLM (see ``core.targets.loader.load_target``).

    Attributes: ``family`` (``config.model_type``), ``profile``, ``model``, ``processor``,
    ``tokenizer``, ``device``, ``dtype``, ``eos_token_ids`` (stop ids), ``pad_token_id`` and
    ``vocab_size`` (width of the logits, which can exceed the tokenizer's vocabulary).
    """

    measures_pass_cost = True  # a real model: its passes are timed (``core.targets.protocol``)
    #: The fast engine's static cache and compiled passes (``core.targets.fast_pass``), where the
    #: model was loaded with ``engine="fast"``; None: the eager engine (``forward`` below).
    fast_passes = None
    clock = staticmethod(time.perf_counter)  # by the wall-clock (``DecodeTarget.clock``)

    def __init__(self, *, profile: Profile, model, processor, tokenizer, device: torch.device,
                 dtype: torch.dtype, eos_token_ids: frozenset[int], pad_token_id: int):
        self.profile = profile
        self.family = profile.family
        self.model = model
        self.processor = processor
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype
        self.eos_token_ids = eos_token_ids
        self.pad_token_id = pad_token_id
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        if getattr(device, "type", str(device)) == "cpu":
            from core.targets.cpu_head import install_skinny_head

            install_skinny_head(model)  # verification passes of a few tokens: 2-3x cheaper head

    # ------------------------------------------------------------------------------------------
    # Text

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as the model would write it (no BOS/EOS or other special tokens)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids) -> str:
        """Text of ``ids`` (list or 1-D tensor), special tokens left out."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    # ------------------------------------------------------------------------------------------
    # Prefill

    def prompt_inputs(self, image, kind: str = "page", label: str = "text") -> dict:
        """The processor's model inputs (``input_ids`` ``(1, L)``, pixel values, grids...) on ``device``."""
        image = self._fit_image(image.convert("RGB"), kind)
        prompt = self.profile.prompt(kind, label)
        text = self.processor.apply_chat_template(
            self.profile.messages(prompt), tokenize=False, add_generation_prompt=True)
        inputs = self.processor(images=[image], text=[text], return_tensors="pt")
        return {k: (v.to(self.device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}

    @torch.no_grad()
    def prefill(self, image, kind: str = "page", label: str = "text", region: int | None = None) -> Prefill:
        """Encode ``image`` with the page request (``kind="page"``) or a region request for ``label``.

        ``region`` (the region's index on the page) is ignored here; stand-in targets such as the
        benchmark's replay target use it to know which reference span a region crop stands for."""
        inputs = self.prompt_inputs(image, kind, label)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
        inner = getattr(self.model, "model", None)
        if inner is not None and hasattr(inner, "rope_deltas"):
            inner.rope_deltas = None  # the model caches it between calls; never reuse a stale one
        cache = DynamicCache(config=self.model.config)
        out = self.model(**inputs, cache=cache, use_cache=True, logits_to_keep=1)
        rope_delta = 0
        if inner is not None and getattr(inner, "rope_deltas", None) is not None:
            rope_delta = int(inner.rope_deltas.view(-1)[0])
        return Prefill(cache=cache, length=int(inputs["input_ids"].shape[1]), rope_delta=rope_delta,
                       logits=out.logits[0, -1].float())

    @torch.no_grad()
    def prefill_batch(self, requests: list[PrefillRequest]) -> BatchPrefill:
        """Encode several prompts in **one** forward pass, left-padded to the longest.

        The processor pads the token ids on the left and the model computes each row's (multimodal)
        positions from its attention mask, so a row's cache, rope offset and first logits equal its
        single ``prefill`` up to float rounding (tested per family). Falls back to one pass per
        request where the tokenizer has no padding token.
        """
        if len(requests) == 1 or getattr(self.processor.tokenizer, "pad_token", None) is None:
            return stack_prefills([self.prefill(r.image, r.kind, r.label, r.region) for r in requests])
        images, texts = [], []
        for r in requests:
            images.append(self._fit_image(r.image.convert("RGB"), r.kind))
            texts.append(self.processor.apply_chat_template(
                self.profile.messages(self.profile.prompt(r.kind, r.label)), tokenize=False,
                add_generation_prompt=True))
        tokenizer = self.processor.tokenizer
        side = tokenizer.padding_side
        tokenizer.padding_side = "left"  # the last column is every row's last prompt token
        try:
            inputs = self.processor(images=images, text=texts, return_tensors="pt", padding=True)
        finally:
            tokenizer.padding_side = side
        inputs = {k: (v.to(self.device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
        inner = getattr(self.model, "model", None)
        if inner is not None and hasattr(inner, "rope_deltas"):
            inner.rope_deltas = None
        cache = DynamicCache(config=self.model.config)
        out = self.model(**inputs, cache=cache, use_cache=True, logits_to_keep=1)
        valid = inputs["attention_mask"].bool()
        deltas = [0] * len(requests)
        if inner is not None and getattr(inner, "rope_deltas", None) is not None:
            deltas = [int(d) for d in inner.rope_deltas.view(-1).tolist()]
        return BatchPrefill(cache=cache, valid=valid, lengths=valid.sum(dim=1).tolist(), rope_deltas=deltas,
                            logits=out.logits[:, -1].float(), passes=1)

    @property
    def region_min_pixels(self) -> int:
        """Pixels a region crop is upscaled to at least: the profile's bound, else the image
        processor's own ``min_pixels`` (so a crop reaches the processor at the size it would resize
        it to anyway, resampled once)."""
        if self.profile.region_min_pixels is not None:
            return self.profile.region_min_pixels
        return processor_min_pixels(self.processor) or 64 * 64

    def _fit_image(self, image, kind: str):
        """Bound the pixel count: pages down to ``page_max_pixels``, regions up to ``region_min_pixels``."""
        from PIL import Image

        pixels = image.width * image.height
        if kind == "page" and pixels > self.profile.page_max_pixels:
            scale = math.sqrt(self.profile.page_max_pixels / pixels)
        elif kind == "region" and pixels < self.region_min_pixels:
            scale = math.sqrt(self.region_min_pixels / max(pixels, 1))
        else:
            return image
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        return image.resize(size, Image.Resampling.BICUBIC)

    # ------------------------------------------------------------------------------------------
    # Verification forward

    def position_ids(self, positions: torch.Tensor, rope_deltas: torch.Tensor | None = None) -> torch.Tensor:
        """Logical positions ``(B, q)`` -> the family's ``position_ids`` (``(rope_axes, B, q)``)."""
        if rope_deltas is None:
            rope_deltas = torch.zeros(positions.shape[0], dtype=torch.long, device=positions.device)
        return self.profile.position_ids(positions, rope_deltas)

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, attention_mask: torch.Tensor,
                cache: DynamicCache, rope_deltas: torch.Tensor | None = None,
                real: torch.Tensor | None = None, greedy: bool = False) -> torch.Tensor:
        """Run ``q`` new tokens per row on top of ``cache`` (which grows by ``q`` columns).

        ``tokens``, ``positions``: ``(B, q)`` long; positions are logical (prefill length + depth).
        ``attention_mask``: ``(B, 1, q, T + q)`` additive, in ``self.dtype`` (0 attend, finfo.min
        blocked), where ``T`` is the cache's current column count; it alone decides what each new
        token sees, so it must also be causal / ancestor-only among the new tokens.
        ``rope_deltas``: ``(B,)`` long, each row's ``Prefill.rope_delta`` (zeros if omitted).
        ``real``: ``(B, q)`` bool, the positions whose logits are read (False: a row's padding, whose
        logits may come back as zeros; on a CPU the head then skips them).
        Returns logits ``(B, q, V)`` float32; with ``greedy``, their argmax ids ``(B, q)`` long (what
        verification at tau = 1 reads; only ``B x q`` ids leave the device).
        """
        tokens = tokens.to(self.device)
        positions = positions.to(self.device)
        expected = (tokens.shape[0], 1, tokens.shape[1], cache.get_seq_length() + tokens.shape[1])
        if tuple(attention_mask.shape) != expected:
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, expected {expected}")
        with real_positions_only(self.model, real):
            out = self.model(
                input_ids=tokens,
                position_ids=self.position_ids(positions, rope_deltas),
                attention_mask=attention_mask.to(device=self.device, dtype=self.dtype),
                cache=cache,
                use_cache=True,
            )
        if greedy:
            return greedy_ids(out.logits)  # exact in the model's dtype: float32 orders them alike
        return out.logits.float()
