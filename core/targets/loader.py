"""Load a target VLM (hub id or local folder) into a ``Target``.

Hub models and the tiny demo models of ``hsd tiny-model`` go through the same ``from_pretrained``
calls. Weights are read from safetensors only, and remote code runs only when the user asks for it.

``check_model_folder`` decides from the file system alone what certainly cannot load (a folder that
does not exist, has no ``config.json``, names a family we do not support or holds no safetensors),
so the command line says so in one line before torch is imported; this module imports torch and
transformers only when a model is loaded.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from core import tuning
from core.errors import ModelLoadError
from core.targets.bounded_files import check_chat_template, check_file_sizes
from core.targets.families import FAMILY_MODULES

if TYPE_CHECKING:
    import torch

    from core.targets.base import Target
    from core.targets.profiles import Profile

log = logging.getLogger(__name__)

#: What users get without naming a model (``tuning.DEFAULT_MODEL``: HunyuanOCR, 0.9B, the
#: paper's best-accelerated target), named here too for the code that imports it with the loader.
DEFAULT_MODEL = tuning.DEFAULT_MODEL

#: dtype names users may give -> torch attribute.
_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
           "fp32": "float32", "float32": "float32"}

#: A hub id: ``org/name``.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")

#: A config.json larger than this is not a model's configuration (real ones are a few KB).
_MAX_CONFIG_BYTES = 4 << 20


#: The largest value a model's configuration may give a size field: far above any real document
#: VLM's (vocabularies of about 150,000-260,000 tokens, widths of a few thousand, a few dozen
#: layers), far below what would make transformers allocate gigabytes before it says anything.
_MAX_CONFIG_SIZES = {"vocab_size": 1 << 21, "hidden_size": 1 << 16, "intermediate_size": 1 << 18,
                     "num_hidden_layers": 1 << 10, "num_attention_heads": 1 << 10,
                     "num_key_value_heads": 1 << 10, "depth": 1 << 10, "num_heads": 1 << 10,
                     "embed_dim": 1 << 16, "head_dim": 1 << 12, "patch_size": 1 << 10,
                     "image_size": 1 << 16, "out_hidden_size": 1 << 16, "num_experts": 1 << 12}


def _oversized_field(data, where: str = "") -> str | None:
    """The first size field of a configuration (nested ones such as ``text_config`` included) that
    is not a whole number in ``1..limit`` (see ``_MAX_CONFIG_SIZES``), as ``path = value``."""
    if isinstance(data, dict):
        for key, value in data.items():
            limit = _MAX_CONFIG_SIZES.get(key)
            if limit is not None and value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                                            or not 0 < value <= limit):
                shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
                return f"{where}{key} = {shown} (at most {limit:,})"
            if isinstance(value, dict):
                found = _oversized_field(value, f"{where}{key}.")
                if found:
                    return found
    return None


def check_config_sizes(name: str, data) -> None:
    """``ModelLoadError`` when a size in the configuration ``data`` is beyond any real model's: the
    model would only fail after trying to allocate it (transformers' RuntimeError, or memory out)."""
    found = _oversized_field(data)
    if found:
        raise _cannot_load(name, f"its config.json gives an impossible size: {found}")


def pick_device(device: str | None = None) -> "torch.device":
    """``device`` if given, else cuda, then mps (Apple Silicon), then cpu (``core.hardware.choose_device``)."""
    import torch

    from core.hardware import choose_device

    mps = getattr(torch.backends, "mps", None)
    return torch.device(choose_device(device, torch.cuda.is_available(), mps is not None and mps.is_available()))


def pick_dtype(device: "torch.device", dtype: str | None = None) -> "torch.dtype":
    """``dtype`` by name if given; bf16 on CUDA, fp32 elsewhere (CPU bf16 matmuls are slow, MPS fp16 overflows)."""
    import torch

    if dtype:
        try:
            return getattr(torch, _DTYPES[dtype.lower()])
        except KeyError:
            raise ModelLoadError(f"unknown dtype {dtype!r}; use one of bf16, fp16, fp32") from None
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def _cannot_load(name: str, reason: str) -> ModelLoadError:
    example = name if _HUB_ID.fullmatch(name) else tuning.DEFAULT_MODEL
    return ModelLoadError(
        f"could not load model {name!r} ({reason}). "
        "Pass a local folder that holds the model (config.json, *.safetensors, tokenizer and processor files), "
        f"for example one downloaded earlier with `hf download {example} --local-dir DIR`, or check the hub id; "
        "for a demo without any download, build a tiny model with `hsd tiny-model DIR --arch hunyuan_vl` "
        "and pass DIR."
    )


def _not_found(name: str, cause: Exception) -> ModelLoadError:
    text = str(cause).splitlines()[0] if str(cause) else ""
    return _cannot_load(name, f"{type(cause).__name__}: {text}")


def _looks_like_path(name: str) -> bool:
    """Not a hub id ("org/name"): an absolute or explicitly relative path, or one whose first
    folder exists here (``models/tiny`` beside a ``models`` folder)."""
    if Path(name).is_absolute() or name.startswith(("./", "../", "~", ".\\", "..\\")) or "\\" in name:
        return True
    if not _HUB_ID.fullmatch(name):
        return "/" in name
    return Path(name.split("/", 1)[0]).is_dir()


def _unsupported(name: str, model_type) -> ModelLoadError:
    what = f"is a {model_type!r} model" if model_type else "names no model_type in its config.json"
    return ModelLoadError(f"model {name!r} {what}; supported families are {', '.join(FAMILY_MODULES)}")


def check_model_folder(name_or_path) -> None:
    """``ModelLoadError`` (one line naming what is missing) when ``name_or_path`` certainly cannot
    load, decided from the file system alone (no torch, no network): a path that does not exist or
    is a file, a folder without ``config.json``, a config that is not JSON or names a family we do
    not support, a folder without ``*.safetensors`` weights. A hub id that is not a local folder
    passes: only the loader can look it up."""
    name = str(name_or_path)
    local = Path(name).expanduser()
    if not local.is_dir():
        if local.exists():
            raise _cannot_load(name, "it is a file, not a model folder")
        if _looks_like_path(name) or os.path.lexists(local):
            raise _cannot_load(name, "no such folder")
        return
    config = local / "config.json"
    if not config.is_file():
        raise _cannot_load(name, "the folder has no config.json")
    try:
        if config.stat().st_size > _MAX_CONFIG_BYTES:
            raise ValueError("far too large for a model configuration")
        data = json.loads(config.read_text("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise _cannot_load(name, f"its config.json cannot be read: {str(exc).splitlines()[0][:120]}") from None
    model_type = data.get("model_type") if isinstance(data, dict) else None
    if not isinstance(model_type, str) or model_type not in FAMILY_MODULES:
        raise _unsupported(name, model_type)
    check_config_sizes(name, data)
    check_file_sizes(name, local)
    if not any(local.glob("*.safetensors")):
        other = "; it holds only .bin weights, which are never loaded" if any(local.glob("*.bin")) else ""
        raise _cannot_load(name, f"the folder has no *.safetensors weights{other}")


def hub_reachable(timeout: float = tuning.HUB_CHECK_SECONDS) -> bool:
    """Whether the Hugging Face hub answers at all, asked once and without retries (the hub's own
    downloads retry an unreachable host for half a minute). False at once in offline mode
    (``HF_HUB_OFFLINE``) or without huggingface_hub."""
    try:
        from huggingface_hub import constants
        from huggingface_hub.utils import get_session
    except ImportError:
        return False
    if constants.HF_HUB_OFFLINE:
        return False
    try:
        get_session().head(constants.ENDPOINT, timeout=timeout)  # any answer, even an error page, is the hub
    except Exception:  # no route, no name resolution, a timeout, offline mode
        return False
    return True


def cached_snapshot(hub_id: str) -> Path | None:
    """The folder of ``hub_id`` in the local Hugging Face cache, if a download put it there."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(hub_id, "config.json")
    except Exception:  # huggingface_hub missing, or an id it refuses
        return None
    return Path(found).parent if isinstance(found, str) else None


def model_source(name: str) -> str:
    """Where to load ``name`` from: ``name`` itself, or, for a hub id while the hub cannot be
    reached, its snapshot in the local cache (a folder: loading it asks the hub nothing, so no
    retries). ``ModelLoadError`` in one line for a hub id neither cached nor reachable."""
    if not _HUB_ID.fullmatch(name) or Path(name).expanduser().is_dir():
        return name
    if hub_reachable():
        return name
    cached = cached_snapshot(name)
    if cached is not None:
        return str(cached)
    from huggingface_hub import constants

    raise ModelLoadError(f"the model {name} is not in the local Hugging Face cache and the hub "
                         f"({constants.ENDPOINT}) cannot be reached: download it while online "
                         f"(`hf download {name}`) or pass a local model folder (for a demo without any "
                         "download, build one with `hsd tiny-model DIR --arch hunyuan_vl`)")


def load_target(name_or_path: str, device: str | None = None, dtype: str | None = None,
                trust_remote_code: bool = False, engine: str = "eager", max_gpu_memory=None) -> Target:
    """Load a document VLM by hub id or local folder.

    ``engine``: "eager", or "fast" (``core.targets.fast_pass``: its passes are compiled now, a step
    of the load). Raises ``ModelLoadError`` when the model cannot be found or read, or its family
    is not supported. ``max_gpu_memory`` (a ``core.hardware.MemoryCap``): the model loads and decodes
    within it, or is refused before its weights are read.
    """
    # Folders that cannot load fail at once, not after torch's import or the hub's network retries.
    check_model_folder(name_or_path)
    source = model_source(str(name_or_path))
    # The hub client logs each retry of a request that fails (a network lost mid-download): the
    # error that ends the load says it in one line, so those lines are held back while loading.
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(max(logging.ERROR, level))
    try:
        target = _load_target(source, device, dtype, trust_remote_code, max_gpu_memory)
    finally:
        hub_log.setLevel(level)
    if engine == "fast":
        from core.targets.fast_pass import install_fast_engine

        install_fast_engine(target)
    elif engine != "eager":
        raise ModelLoadError(f"unknown engine {engine!r}; use eager or fast")
    return target


def _load_target(source: str, device, dtype, trust_remote_code: bool, max_gpu_memory=None) -> Target:
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoModelForImageTextToText

    from core.targets.base import Target
    from core.targets.profiles import get_profile

    name = source
    local = Path(name).expanduser()
    if local.is_dir():
        name = str(local)
    torch_device = pick_device(device)
    torch_dtype = pick_dtype(torch_device, dtype)
    try:
        config = AutoConfig.from_pretrained(name, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:  # not found, offline, or not a model folder
        raise _not_found(name, exc) from exc
    model_type = getattr(config, "model_type", None)
    if model_type not in FAMILY_MODULES:
        raise _unsupported(name, model_type)
    check_config_sizes(name, config.to_dict())
    profile = get_profile(model_type)
    if local.is_dir():
        check_file_sizes(name, local)
    if max_gpu_memory is not None:  # refused here, before any weight is read, when it cannot fit
        from core.hardware import apply_cap

        apply_cap(max_gpu_memory, torch_device, torch_dtype, local if local.is_dir() else None, config.to_dict())
    try:
        model = AutoModelForImageTextToText.from_pretrained(
            name, config=config, dtype=torch_dtype, use_safetensors=True,
            trust_remote_code=trust_remote_code, attn_implementation=profile.attention(torch_device.type),
        )
        processor = _load_processor(name, profile, trust_remote_code)
    except (OSError, ValueError, SafetensorError) as exc:  # SafetensorError: damaged weight files
        raise _not_found(name, exc) from exc
    except ImportError as exc:  # e.g. a processor that needs a package this install lacks
        raise ModelLoadError(f"model {name!r} needs a package that is not installed: {exc}") from exc
    check_chat_template(name, processor, profile)
    model.to(torch_device).eval()
    tokenizer = processor.tokenizer
    if len(tokenizer) < 2:  # transformers builds an empty tokenizer when the folder has none
        raise ModelLoadError(f"model {name!r} has no usable tokenizer (tokenizer.json or vocabulary files missing)")
    eos = _stop_token_ids(model, tokenizer, profile)
    pad = tokenizer.pad_token_id
    if pad is None:
        pad = getattr(model.generation_config, "pad_token_id", None)
    if pad is None:
        pad = min(eos)
    return Target(profile=profile, model=model, processor=processor, tokenizer=tokenizer,
                  device=torch_device, dtype=torch_dtype, eos_token_ids=eos, pad_token_id=int(pad))


def _load_processor(name: str, profile: Profile, trust_remote_code: bool):
    """The family's processor; without torchvision, the same class minus its video processor."""
    from transformers import AutoProcessor

    from transformers.processing_utils import ProcessorMixin

    backend = {"backend": profile.image_backend} if profile.image_backend else {}
    if profile.fallback_processor is None:
        return AutoProcessor.from_pretrained(name, trust_remote_code=trust_remote_code, **backend)
    try:
        processor = AutoProcessor.from_pretrained(name, trust_remote_code=trust_remote_code, **backend)
    except (ImportError, ValueError, KeyError, TypeError) as exc:
        # Qwen-VL and GLM processors build a video processor that needs torchvision; HSD only ever
        # feeds images, so the video half can go.
        log.info("AutoProcessor failed for %s (%s); building an image-only %s",
                 name, exc, profile.fallback_processor)
        return _image_only_processor(name, profile.fallback_processor, trust_remote_code)
    if not isinstance(processor, ProcessorMixin):
        # No processor mapped for the family (glm_ocr): AutoProcessor quietly returns the tokenizer.
        return _image_only_processor(name, profile.fallback_processor, trust_remote_code)
    return processor


def _image_only_processor(name: str, processor_class_name: str, trust_remote_code: bool):
    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer
    from transformers.utils import cached_file

    processor_class = getattr(transformers, processor_class_name)

    class ImageOnlyProcessor(processor_class):
        # ProcessorMixin takes its sub-processors from this list; the family's __init__ still passes
        # video_processor=None positionally, which the shorter list silently drops.
        @classmethod
        def get_attributes(cls):
            return ["image_processor", "tokenizer"]

    ImageOnlyProcessor.__name__ = f"ImageOnly{processor_class_name}"
    tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)
    image_processor = AutoImageProcessor.from_pretrained(name, trust_remote_code=trust_remote_code)
    chat_template = getattr(tokenizer, "chat_template", None)
    if not chat_template:  # hub checkpoints keep it in one of two files beside the tokenizer
        template_file = cached_file(name, "chat_template.jinja", _raise_exceptions_for_missing_entries=False)
        if template_file:
            chat_template = Path(template_file).read_text(encoding="utf-8")
        else:
            json_file = cached_file(name, "chat_template.json", _raise_exceptions_for_missing_entries=False)
            if json_file:
                chat_template = json.loads(Path(json_file).read_text(encoding="utf-8"))["chat_template"]
    if not chat_template:
        raise ModelLoadError(f"model {name!r} has no chat template")
    return ImageOnlyProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=chat_template)


def _stop_token_ids(model, tokenizer, profile: Profile) -> frozenset[int]:
    """EOS ids (and HunyuanOCR's eod) from the generation config and config, plus the profile's stop
    tokens in the vocabulary."""
    ids: set[int] = set()
    for source in (model.generation_config, model.config, model.config.get_text_config()):
        for key in ("eos_token_id", "eod_token_id"):
            eos = getattr(source, key, None)
            if eos is not None:
                ids.update([eos] if isinstance(eos, int) else eos)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    vocab = tokenizer.get_vocab()
    ids.update(vocab[t] for t in profile.stop_tokens if t in vocab)
    if not ids:
        raise ModelLoadError("the model names no end-of-sequence token")
    return frozenset(int(i) for i in ids)
