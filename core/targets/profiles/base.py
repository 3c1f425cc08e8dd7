"""What differs between target families: prompts, image size limits, stop tokens, position ids.

A profile holds no model state. ``Target`` asks it how to phrase the page / region request and how
to turn logical positions (the index of a token in its sequence) into the ``position_ids`` tensor the
family's ``forward`` expects.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: Region labels whose crop asks for a specific output format (others are read as plain text).
TABLE_LABELS = frozenset({"table"})
FORMULA_LABELS = frozenset({"formula"})
CHART_LABELS = frozenset({"chart"})


@dataclass(frozen=True)
class PageStyle:
    """How a family writes a page's Markdown where the drafts cannot say (documented, known before
    decoding): ``openings`` are the texts a page's output may start with before its first region
    (Qwen3-VL's ```` ```markdown ```` fence; ``""``: none), most likely first; ``heading_marks``
    the marks it may put before a title the drafter marked as a heading (drafters write ``# ``
    for every title level they cannot tell apart)."""

    openings: tuple[str, ...] = ("",)
    heading_marks: tuple[str, ...] = ("# ", "## ", "### ")

    def merged(self, other: "PageStyle") -> "PageStyle":
        """Both styles' choices (this one's first): where the family is unknown, every family's."""
        return PageStyle(_union(self.openings, other.openings), _union(self.heading_marks, other.heading_marks))


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return a + tuple(x for x in b if x not in a)


@dataclass(frozen=True)
class Profile:
    """Per-family knowledge. Subclasses set the class attributes and override prompts where needed.

    ``rope_axes`` is the number of rotary position rows the text model takes: 3 for the multimodal RoPE
    (temporal, height, width) of Qwen2.5/3-VL, PaddleOCR-VL and GLM-OCR; 4 for HunyuanVL's xdrope.
    After the prompt every axis of a text token carries the same value, ``logical + rope_delta``.
    """

    family: str = ""
    rope_axes: int = 3
    #: Pages are downscaled (aspect kept) to at most this many pixels before the image processor,
    #: so a 600 dpi scan cannot blow up the vision prefill; the processor applies its own limits too.
    page_max_pixels: int = 2048 * 2048
    #: Region crops smaller than this are upscaled: OCR of a 20 px high line needs more pixels.
    #: None: the loaded image processor's own ``min_pixels`` (the checkpoint's real limit).
    region_min_pixels: int | None = None
    page_prompt: str = "Convert this document page to Markdown. Write tables as HTML and formulas as LaTeX."
    text_prompt: str = "Read all the text in this image."
    table_prompt: str = "Convert this table to HTML."
    formula_prompt: str = "Write this formula in LaTeX."
    #: Element-level families only: the request for a chart crop.
    chart_prompt: str | None = None
    #: A system message sent before the user turn (None: none, as the model card's example does).
    system_message: str | None = None
    #: Attention kernel the model is loaded with (``attn_implementation``) ...
    attn_implementation: str = "sdpa"
    #: ... and on a CPU, where measured faster with the same output (None: the same kernel).
    cpu_attn_implementation: str | None = None
    #: Image-processor backend ("pil", "torchvision"; None: transformers' choice).
    image_backend: str | None = None
    #: Element-level models (PaddleOCR-VL, GLM-OCR) read one layout region per request, never a
    #: whole page: a page is its regions' crops, each with its task prompt, joined in reading order.
    element_level: bool = False
    #: Text-only extra stop tokens, looked up in the vocabulary (ids from the config come on top).
    stop_tokens: tuple[str, ...] = ()
    #: Where ``transformers`` has no processor for the family: the processor class that fits it.
    fallback_processor: str | None = None
    #: How the page output is written where the drafts cannot tell (its opening, its heading marks).
    style: PageStyle = PageStyle()

    def region_prompt(self, label: str) -> str:
        """The request for one layout region's crop; ``label`` is a ``core.drafters.base`` label."""
        if label in TABLE_LABELS:
            return self.table_prompt
        if label in FORMULA_LABELS:
            return self.formula_prompt
        if label in CHART_LABELS and self.chart_prompt:
            return self.chart_prompt
        return self.text_prompt

    def prompt(self, kind: str, label: str = "text") -> str:
        if kind == "page":
            return self.page_prompt
        if kind == "region":
            return self.region_prompt(label)
        raise ValueError(f"prompt kind must be 'page' or 'region', not {kind!r}")

    def messages(self, prompt: str) -> list[dict]:
        """Chat messages for one image followed by the request (the order the model cards use),
        after the system message where the family sends one."""
        user = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
        if self.system_message is None:
            return [user]
        return [{"role": "system", "content": [{"type": "text", "text": self.system_message}]}, user]

    def attention(self, device_type: str) -> str:
        """The attention kernel to load the model with on a ``device_type`` ("cpu", "cuda", ...)."""
        if device_type == "cpu" and self.cpu_attn_implementation:
            return self.cpu_attn_implementation
        return self.attn_implementation

    def postprocess(self, text: str) -> str:
        """The decoded output as our Markdown (the family's native format converted); identity here."""
        return text

    def position_ids(self, logical: torch.Tensor, rope_deltas: torch.Tensor) -> torch.Tensor:
        """Logical positions ``(B, q)`` plus per-row offsets ``(B,)`` -> ``(rope_axes, B, q)`` position ids."""
        text_positions = logical + rope_deltas.to(logical.device).view(-1, 1)
        return text_positions.unsqueeze(0).expand(self.rope_axes, -1, -1)
