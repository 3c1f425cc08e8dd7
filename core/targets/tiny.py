"""Tiny randomly initialised models of the real target architectures, for demos and tests offline.

``build_tiny_model(out_dir, arch)`` writes a folder laid out like a hub checkpoint (config, safetensors
weights, tokenizer, image processor, chat template) so that ``load_target(out_dir)`` loads it through
exactly the same ``from_pretrained`` path as a real model. The layout is the real checkpoint's
(``core.targets.real_layouts``): its vocabulary size, its special tokens at their real ids, its stop
ids, its chat template's layout, its rotary sections scaled to a 32-wide head, its image-processor
limits. The ordinary text is a byte-level BPE of 4096 tokens trained on built-in text in well under a
second. The text model is tiny (hidden size 64, two layers) so that even a 151 936-row embedding
stays small and fast on a CPU. Input and output embeddings are untied even where the real checkpoint
ties them: a tied random model predicts the token it was just given and loops. ``initializer_range`` 0.1 and sharpened q/k-norm attention make greedy
output varied rather than a short loop (a losslessness test over a degenerate model proves nothing).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.targets.real_layouts import LAYOUTS, ProcessorLimits, RealLayout
from core.targets.tiny_corpus import TOKENIZER_TRAINING_TEXT

#: Ordinary-text tokens of the tiny BPE; the special tokens sit at their real ids above (or among) them.
TINY_VOCAB_SIZE = 4096
#: Large enough for varied greedy output from random weights (0.02, the default, collapses).
TINY_INITIALIZER_RANGE = 0.1
#: The text model's: a 64-wide model needs more spread than the vision tower to avoid loops.
TINY_TEXT_INITIALIZER_RANGE = 0.2
#: Head width of the tiny text models; the real rotary sections (for 128-wide heads) are scaled to it.
TINY_HEAD_DIM = 32

# A hidden size of 64 keeps the real-width embeddings (up to 151 936 rows) at a few MB; two heads of
# 32 (Qwen2.5-VL derives its head width from hidden size / heads), one KV head shared (GQA).
_TEXT_SIZES = dict(
    hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
    num_key_value_heads=1, head_dim=TINY_HEAD_DIM, max_position_embeddings=32768,
    initializer_range=TINY_TEXT_INITIALIZER_RANGE,
)
_VISION_SIZES = dict(depth=2, hidden_size=128, intermediate_size=256, num_heads=2,
                     initializer_range=TINY_INITIALIZER_RANGE)


# ----------------------------------------------------------------------------------------------
# Tokenizer


def train_tiny_tokenizer(special_tokens: list[str], vocab_size: int = TINY_VOCAB_SIZE):
    """A byte-level BPE trained on the built-in corpus; ``special_tokens`` get ids 0, 1, 2, ... in order.

    Returns a raw ``tokenizers.Tokenizer`` whose vocabulary has exactly ``vocab_size`` entries.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    # Random numbers add enough distinct byte pairs for the trainer to reach the full vocabulary.
    rng = random.Random(0)
    numbers = [" ".join(str(rng.randint(0, 99999)) for _ in range(200)) for _ in range(20)]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special_tokens, min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(TOKENIZER_TRAINING_TEXT + numbers, trainer=trainer)
    if tokenizer.get_vocab_size() != vocab_size:
        raise RuntimeError(f"tiny tokenizer reached {tokenizer.get_vocab_size()} tokens, not {vocab_size}")
    return tokenizer


def filler_token(token_id: int) -> str:
    """The name of an id the tiny tokenizer does not use (the real one has an ordinary word there)."""
    return f"<unused_{token_id}>"


def real_layout_tokenizer(layout: RealLayout):
    """A tokenizer with ``layout``'s special tokens at their real ids and a tiny BPE for the text.

    The BPE's tokens take the lowest ids the special tokens leave free; the ids between them and the
    real vocabulary's end are fillers (``filler_token``) that no text encodes to. Returns the raw
    ``tokenizers.Tokenizer`` and the ids of the BPE's tokens.
    """
    import json

    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    trained = train_tiny_tokenizer([])
    model = json.loads(trained.to_str())["model"]
    taken = set(layout.special_tokens.values())
    free = (i for i in range(layout.tokenizer_size) if i not in taken)
    vocab: dict[str, int] = {}
    for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1]):
        vocab[token] = next(free)
    text_ids = set(vocab.values())
    vocab.update({filler_token(i): i for i in free})
    vocab.update(layout.special_tokens)
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # Listed in id order: the added vocabulary keeps the ids the model vocabulary gives them.
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, _ in sorted(layout.special_tokens.items(), key=lambda kv: kv[1])])
    if tokenizer.get_vocab_size() != layout.tokenizer_size:
        raise RuntimeError(f"{layout.family}: tokenizer has {tokenizer.get_vocab_size()} tokens, "
                           f"not the real {layout.tokenizer_size}")
    return tokenizer, text_ids


def _wrap_tokenizer(raw, chat_template: str, **special):
    """``PreTrainedTokenizerFast`` around ``raw``; ``special`` names bos/eos/pad/... and ``extra_special_tokens``."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, **special)
    tokenizer.chat_template = chat_template
    return tokenizer


# ----------------------------------------------------------------------------------------------
# Chat templates: the real checkpoints' layouts, written for the messages HSD sends (a system
# message or none, then a user turn of images and text). ``tests/core/targets`` renders them beside
# the checkpoints' own templates where those files are at hand.

def _content(image: str) -> str:
    """Jinja for a message's content: a string, or parts (images as ``image``, texts as themselves)."""
    return ("{% if message['content'] is string %}{{ message['content'] }}{% else %}"
            "{% for part in message['content'] %}{% if part['type'] == 'image' %}" + image
            + "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}")


def _qwen_template(default_system: str | None) -> str:
    """Qwen2.5-VL's template puts a default system turn first; Qwen3-VL's does not."""
    system = ("{% if messages[0]['role'] != 'system' %}<|im_start|>system\n" + default_system + "<|im_end|>\n{% endif %}"
              if default_system else "")
    return (system + "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
            + _content("<|vision_start|><|image_pad|><|vision_end|>") + "<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


#: HunyuanOCR: BOS, [system text, separator], then per user turn images and text closed by
#: <｜hy_User｜>; an assistant turn ends with <｜hy_Assistant｜> (the eos). No generation prompt.
_HUNYUAN_TEMPLATE = (
    "<｜hy_begin▁of▁sentence｜>{% for message in messages %}"
    "{% if message['role'] == 'system' %}" + _content("") + "<｜hy_place▁holder▁no▁3｜>"
    "{% elif message['role'] == 'user' %}"
    + _content("<｜hy_place▁holder▁no▁100｜><｜hy_place▁holder▁no▁102｜><｜hy_place▁holder▁no▁101｜>")
    + "<｜hy_User｜>{% elif message['role'] == 'assistant' %}" + _content("") + "<｜hy_Assistant｜>"
    "{% endif %}{% endfor %}"
)

#: PaddleOCR-VL: <|begin_of_sentence|>, "User: " images first then texts, a newline, "Assistant: ".
#: (A newline right after a block tag would be dropped: transformers renders with ``trim_blocks``.)
_PADDLE_TEMPLATE = (
    "<|begin_of_sentence|>{% for message in messages %}"
    "{% if message['role'] == 'user' %}User: "
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>{% endif %}{% endfor %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\\n' }}"
    "{% elif message['role'] == 'assistant' %}Assistant: " + _content("") + "</s>"
    "{% elif message['role'] == 'system' %}" + _content("") + "{{ '\\n' }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}Assistant: {% endif %}"
)

_GLM_TEMPLATE = (
    "[gMASK]<sop>{% for message in messages %}<|{{ message['role'] }}|>\n"
    + _content("<|begin_of_image|><|image|><|end_of_image|>") + "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_TEMPLATES = {
    "qwen2_5_vl": _qwen_template("You are a helpful assistant."),
    "qwen3_vl": _qwen_template(None),
    "hunyuan_vl": _HUNYUAN_TEMPLATE,
    "paddleocr_vl": _PADDLE_TEMPLATE,
    "glm_ocr": _GLM_TEMPLATE,
}


def tiny_chat_template(arch: str, metadata: Path | None = None) -> str:
    """The family's chat template: the checkpoint's own ``chat_template.jinja`` from ``metadata``
    where that folder has one, else the built-in reproduction of its layout."""
    if metadata is not None and (metadata / "chat_template.jinja").is_file():
        text = (metadata / "chat_template.jinja").read_text(encoding="utf-8")
        if text.lstrip().startswith("{"):  # a template file, not notes about one
            return text
    return _TEMPLATES[arch]


def _layout_tokenizer(layout: RealLayout, chat_template: str, **extra):
    raw, text_ids = real_layout_tokenizer(layout)
    special = dict(eos_token=layout.eos, pad_token=layout.pad)
    if layout.bos:
        special["bos_token"] = layout.bos
    tokenizer = _wrap_tokenizer(raw, chat_template, **special, **extra)
    return tokenizer, text_ids


# ----------------------------------------------------------------------------------------------
# Families


def _limits(layout: RealLayout, metadata: Path | None) -> ProcessorLimits:
    """The real processor limits, from ``metadata``'s ``processor_config.json`` where present."""
    import json
    from dataclasses import replace

    path = metadata / "processor_config.json" if metadata is not None else None
    if path is None or not path.is_file():
        return layout.processor
    config = json.loads(path.read_text(encoding="utf-8")).get("image_processor", {})
    keys = ("min_pixels", "max_pixels", "patch_size", "merge_size", "temporal_patch_size", "resample")
    values = {k: config[k] for k in keys if k in config}
    values.update({k: tuple(config[k]) for k in ("image_mean", "image_std") if k in config})
    return replace(layout.processor, **values)


def _qwen_image_processor(limits: ProcessorLimits):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        patch_size=limits.patch_size, merge_size=limits.merge_size, temporal_patch_size=limits.temporal_patch_size,
        min_pixels=limits.min_pixels, max_pixels=limits.max_pixels, image_mean=list(limits.image_mean),
        image_std=list(limits.image_std), resample=limits.resample,
    )


def _qwen_tokens(layout: RealLayout) -> dict:
    return {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
            "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"}


def _build_qwen2_5_vl(out_dir: Path, metadata: Path | None) -> Built:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    layout = LAYOUTS["qwen2_5_vl"]
    template = tiny_chat_template("qwen2_5_vl", metadata)
    tokenizer, text_ids = _layout_tokenizer(layout, template, extra_special_tokens=_qwen_tokens(layout))
    ids = layout.special_tokens
    text = dict(_TEXT_SIZES, vocab_size=layout.vocab_size, rope_parameters=layout.scaled_rope(TINY_HEAD_DIM),
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False,
                rms_norm_eps=layout.extra["rms_norm_eps"])
    vision = dict(_VISION_SIZES, out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=14,
                  window_size=112, fullatt_block_indexes=[1])
    config = Qwen2_5_VLConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        initializer_range=TINY_INITIALIZER_RANGE, tie_word_embeddings=False,
    )
    config.eos_token_id = list(layout.stop_ids)
    config.pad_token_id = ids["<|endoftext|>"]
    model = Qwen2_5_VLForConditionalGeneration(config)
    return Built(model, tokenizer, _qwen_image_processor(_limits(layout, metadata)), template, None, text_ids)


def _build_qwen3_vl(out_dir: Path, metadata: Path | None) -> Built:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    layout = LAYOUTS["qwen3_vl"]
    template = tiny_chat_template("qwen3_vl", metadata)
    tokenizer, text_ids = _layout_tokenizer(layout, template, extra_special_tokens=_qwen_tokens(layout))
    ids = layout.special_tokens
    text = dict(_TEXT_SIZES, vocab_size=layout.vocab_size, rope_parameters=layout.scaled_rope(TINY_HEAD_DIM),
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False)
    vision = dict(_VISION_SIZES, out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=16,
                  num_position_embeddings=1024, deepstack_visual_indexes=[0, 1])
    config = Qwen3VLConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        initializer_range=TINY_INITIALIZER_RANGE, tie_word_embeddings=False,
    )
    config.eos_token_id = list(layout.stop_ids)
    config.pad_token_id = ids["<|endoftext|>"]
    model = Qwen3VLForConditionalGeneration(config)
    return Built(model, tokenizer, _qwen_image_processor(_limits(layout, metadata)), template, None, text_ids)


def _build_hunyuan_vl(out_dir: Path, metadata: Path | None) -> Built:
    from transformers import HunYuanVLConfig, HunYuanVLForConditionalGeneration, HunYuanVLProcessor
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil

    layout = LAYOUTS["hunyuan_vl"]
    template = tiny_chat_template("hunyuan_vl", metadata)
    extra = layout.extra
    tokenizer, text_ids = _layout_tokenizer(layout, template, extra_special_tokens={
        "image_token": layout.image_token, "image_start_token": layout.image_start,
        "image_end_token": layout.image_end, "video_token": extra["video_token"],
        "video_start_token": extra["video_start"], "video_end_token": extra["video_end"]})
    ids = layout.special_tokens
    text = dict(_TEXT_SIZES, vocab_size=layout.vocab_size, rope_parameters=layout.scaled_rope(TINY_HEAD_DIM),
                pad_token_id=ids[layout.pad], bos_token_id=ids[layout.bos], eos_token_id=ids[layout.eos],
                eod_token_id=ids[extra["eod"]], sep_token_id=extra["sep_token_id"], tie_word_embeddings=False)
    vision = dict(hidden_size=128, intermediate_size=256, num_attention_heads=2, num_hidden_layers=2,
                  out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=16, max_image_size=2048,
                  min_image_size=512, initializer_range=TINY_INITIALIZER_RANGE)
    config = HunYuanVLConfig(
        text_config=text, vision_config=vision, image_token_id=ids[layout.image_token],
        im_start_id=ids[layout.image_start], im_end_id=ids[layout.image_end],
        im_newline_id=ids[extra["image_newline"]], initializer_range=TINY_INITIALIZER_RANGE,
        tie_word_embeddings=False,
    )
    config.eos_token_id = list(layout.stop_ids)
    config.pad_token_id = ids[layout.pad]
    model = HunYuanVLForConditionalGeneration(config)
    limits = _limits(layout, metadata)
    image_processor = HunYuanVLImageProcessorPil(
        min_pixels=limits.min_pixels, max_pixels=limits.max_pixels, patch_size=limits.patch_size,
        merge_size=limits.merge_size, image_mean=list(limits.image_mean), image_std=list(limits.image_std),
        resample=limits.resample)
    processor = HunYuanVLProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template)
    return Built(model, tokenizer, image_processor, template, processor, text_ids)


def _build_paddleocr_vl(out_dir: Path, metadata: Path | None) -> Built:
    from transformers import PaddleOCRVLConfig, PaddleOCRVLForConditionalGeneration, PaddleOCRVLProcessor
    from transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl import (
        PaddleOCRVLImageProcessorPil,
    )

    layout = LAYOUTS["paddleocr_vl"]
    template = tiny_chat_template("paddleocr_vl", metadata)
    tokenizer, text_ids = _layout_tokenizer(layout, template, unk_token="<unk>",
                                            extra_special_tokens={"image_token": layout.image_token})
    ids = layout.special_tokens
    text = dict(_TEXT_SIZES, vocab_size=layout.vocab_size, rope_parameters=layout.scaled_rope(TINY_HEAD_DIM),
                pad_token_id=ids["<unk>"], bos_token_id=ids["<s>"], eos_token_id=ids["</s>"],
                tie_word_embeddings=False)
    vision = dict(hidden_size=128, intermediate_size=256, num_attention_heads=2, num_hidden_layers=2,
                  image_size=384, patch_size=14, initializer_range=TINY_INITIALIZER_RANGE)
    config = PaddleOCRVLConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids[layout.image_token], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids[layout.image_start], vision_end_token_id=ids[layout.image_end],
        initializer_range=TINY_INITIALIZER_RANGE, tie_word_embeddings=False,
    )
    config.eos_token_id = list(layout.stop_ids)
    config.pad_token_id = ids["<unk>"]
    model = PaddleOCRVLForConditionalGeneration(config)
    limits = _limits(layout, metadata)
    image_processor = PaddleOCRVLImageProcessorPil(
        min_pixels=limits.min_pixels, max_pixels=limits.max_pixels, patch_size=limits.patch_size,
        temporal_patch_size=limits.temporal_patch_size, merge_size=limits.merge_size,
        image_mean=list(limits.image_mean), image_std=list(limits.image_std), resample=limits.resample)
    processor = PaddleOCRVLProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template)
    return Built(model, tokenizer, image_processor, template, processor, text_ids)


def _build_glm_ocr(out_dir: Path, metadata: Path | None) -> Built:
    from transformers import GlmOcrConfig, GlmOcrForConditionalGeneration
    from transformers.models.glm46v.image_processing_pil_glm46v import Glm46VImageProcessorPil

    layout = LAYOUTS["glm_ocr"]
    template = tiny_chat_template("glm_ocr", metadata)
    tokenizer, text_ids = _layout_tokenizer(layout, template, extra_special_tokens={
        "image_token": layout.image_token, "video_token": layout.extra["video_token"]})
    ids = layout.special_tokens
    # The whole head is rotated (partial_rotary_factor 1.0), split over (temporal, height, width).
    text = dict(_TEXT_SIZES, vocab_size=layout.vocab_size, rope_parameters=layout.scaled_rope(TINY_HEAD_DIM),
                pad_token_id=ids[layout.pad], eos_token_id=list(layout.stop_ids), tie_word_embeddings=False)
    vision = dict(_VISION_SIZES, out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=14, image_size=336)
    config = GlmOcrConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids[layout.image_token], video_token_id=ids["<|video|>"],
        image_start_token_id=ids[layout.image_start], image_end_token_id=ids[layout.image_end],
        video_start_token_id=ids["<|begin_of_video|>"], video_end_token_id=ids["<|end_of_video|>"],
        initializer_range=TINY_INITIALIZER_RANGE, tie_word_embeddings=False,
    )
    config.eos_token_id = list(layout.stop_ids)
    config.pad_token_id = ids[layout.pad]
    model = GlmOcrForConditionalGeneration(config)
    limits = _limits(layout, metadata)
    image_processor = Glm46VImageProcessorPil(
        size={"shortest_edge": limits.min_pixels, "longest_edge": limits.max_pixels},
        patch_size=limits.patch_size, merge_size=limits.merge_size,
        temporal_patch_size=limits.temporal_patch_size, image_mean=list(limits.image_mean),
        image_std=list(limits.image_std), resample=limits.resample)
    return Built(model, tokenizer, image_processor, template, None, text_ids)


#: Text-attention query/key RMSNorm weights are multiplied by this (see ``_sharpen_attention``).
QK_NORM_GAIN = 3.0
#: ... and the query/key projections by this (families without q/k normalisation).
QK_PROJ_GAIN = 2.0
_QK_NORM_NAMES = ("q_norm", "k_norm", "query_layernorm", "key_layernorm")
_QK_PROJ_NAMES = ("q_proj", "k_proj")


def _sharpen_attention(model) -> None:
    """Sharpen the text decoder's attention: q/k RMSNorm weights times ``QK_NORM_GAIN``, q/k
    projections times ``QK_PROJ_GAIN``.

    Families with q/k normalisation (Qwen3-VL, HunyuanVL) bound the attention logits to about N(0, 1)
    whatever the initializer range (scaling their projections changes nothing), and a 64-wide random
    model without it attends almost as uniformly: greedy output then becomes a bigram loop that
    ignores context and positions. Sharper attention makes the output depend on both, which is what
    the losslessness tests need to be able to fail.
    """
    import torch

    with torch.no_grad():
        for name, module in model.named_modules():
            is_vision = "visual" in name or "vision" in name or "vit" in name
            weight = getattr(module, "weight", None)
            if is_vision or weight is None:
                continue
            if name.endswith(_QK_NORM_NAMES):
                weight.mul_(QK_NORM_GAIN)
            elif name.endswith(_QK_PROJ_NAMES):
                weight.mul_(QK_PROJ_GAIN)


def _silence_unused_ids(model, text_ids: set[int]) -> None:
    """Zero the output-embedding rows of every id outside the tiny BPE (special tokens, fillers, the
    embedding's rows beyond the tokenizer): their logits are then 0 while the text tokens' maximum
    is positive, so random weights write decodable text that re-encodes to the same ids (the draft
    tests need that), as a trained model writes words rather than placeholders."""
    import torch

    head = model.get_output_embeddings().weight
    keep = torch.zeros(head.shape[0], dtype=torch.bool)
    keep[sorted(text_ids)] = True
    with torch.no_grad():
        head[~keep] = 0.0


@dataclass
class Built:
    """A family's freshly initialised parts, before ``_save`` writes them."""

    model: object
    tokenizer: object
    image_processor: object
    chat_template: str
    processor: object | None
    text_ids: set[int]


def _save(out_dir: Path, built: Built) -> None:
    """Write the folder the way hub checkpoints are laid out (one file per component).

    ``built.processor`` where the family's processor can be built without torchvision (it then writes
    the processor config too); otherwise tokenizer and image processor are saved on their own.
    """
    _sharpen_attention(built.model)
    _silence_unused_ids(built.model, built.text_ids)
    built.model.save_pretrained(out_dir)  # safetensors is the only format transformers 5.x writes
    if built.processor is not None:
        built.processor.save_pretrained(out_dir)
    else:
        built.tokenizer.save_pretrained(out_dir)
        built.image_processor.save_pretrained(out_dir)
    (out_dir / "chat_template.jinja").write_text(built.chat_template, encoding="utf-8")


_BUILDERS: dict[str, Callable[[Path, Path | None], Built]] = {
    "qwen2_5_vl": _build_qwen2_5_vl,
    "hunyuan_vl": _build_hunyuan_vl,
    "qwen3_vl": _build_qwen3_vl,
    "paddleocr_vl": _build_paddleocr_vl,
    "glm_ocr": _build_glm_ocr,
}

#: Architectures ``build_tiny_model`` knows, in the order they were added.
TINY_ARCHS: tuple[str, ...] = tuple(_BUILDERS)


def build_tiny_model(out_dir, arch: str, seed: int = 0, metadata=None) -> Path:
    """Write a tiny random model of architecture ``arch`` (a ``config.model_type``) into ``out_dir``.

    Its special tokens, stop ids, rotary layout (scaled to a tiny head) and image-processor limits
    are the real checkpoint's (``core.targets.real_layouts``). ``metadata``: a folder of the real
    checkpoint's small files; its ``chat_template.jinja`` and ``processor_config.json`` are used
    where present instead of the built-in copies of their layout. The same ``seed`` gives the same
    weights. Returns the folder as a ``Path``.
    """
    if arch not in _BUILDERS:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of {', '.join(TINY_ARCHS)}")
    import torch

    meta = Path(metadata) if metadata is not None else None
    if meta is not None and not meta.is_dir():
        raise ValueError(f"metadata folder not found: {meta}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        _save(out, _BUILDERS[arch](out, meta))
    return out
