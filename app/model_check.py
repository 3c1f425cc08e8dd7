"""Is this a model the app can load? Checked on the spot, without loading weights or going online.

``check_model_folder`` reads a folder's file names and ``config.json`` only: the family must be one
the engine supports, the weights must be safetensors, and a tokenizer must be there. ``check_model``
also accepts a hub id when the hub's local cache holds it; one that is not there yet is
``downloadable`` (``app.model_download`` fetches it with a progress dialog).
``app_message`` rewrites an engine error for the app: it names the app's controls, not CLI flags,
and for a model folder that cannot load, what the folder lacks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model")
MODEL_CONTROLS = "Settings > Model > Folder…"
DEMO_CONTROL = "Help > Build the tiny demo model"


@dataclass
class ModelCheck:
    ok: bool
    family: str | None = None
    problems: list[str] = field(default_factory=list)
    downloadable: bool = False      # a hub id not in the local cache yet

    def text(self) -> str:
        if self.ok:
            return f"OK: a {self.family} model"
        return "; ".join(self.problems)


def supported_families() -> tuple[str, ...]:
    from core.api import FAMILY_MODULES

    return tuple(FAMILY_MODULES)


def check_model_folder(path) -> ModelCheck:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        return ModelCheck(False, problems=[f"{folder} is not a folder"])
    problems = []
    family = None
    config = folder / "config.json"
    if not config.is_file():
        problems.append("no config.json (is this the model's own folder?)")
    else:
        try:
            family = json.loads(config.read_text("utf-8")).get("model_type")
        except (OSError, ValueError, AttributeError) as exc:
            problems.append(f"config.json cannot be read ({type(exc).__name__})")
        else:
            if family not in supported_families():
                problems.append(f"family {family!r} is not supported (supported: {', '.join(supported_families())})")
    if not any(folder.glob("*.safetensors")):
        problems.append("no *.safetensors weights")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        problems.append("no tokenizer (tokenizer.json or vocabulary files)")
    return ModelCheck(not problems, family, problems)


def cached_hub_folder(hub_id: str) -> Path | None:
    """The local snapshot of ``hub_id`` in the Hugging Face cache, if one was downloaded before."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(hub_id, "config.json")
    except Exception:  # a malformed id
        return None
    return Path(found).parent if isinstance(found, str) else None


def model_name(model: str) -> str:
    """The model a setting names: ``""`` is the engine's default model."""
    model = (model or "").strip()
    if model:
        return model
    from core.api import DEFAULT_MODEL

    return DEFAULT_MODEL


def check_model(model: str) -> ModelCheck:
    """A folder, or a hub id found in the local cache; ``""`` means the engine's default model."""
    model = model_name(model)
    if Path(model).expanduser().is_dir():
        return check_model_folder(model)
    if HUB_ID.match(model):
        folder = cached_hub_folder(model)
        if folder is None:
            return ModelCheck(False, problems=[f"{model} is not downloaded on this computer yet (converting "
                                               "downloads it into the Hugging Face cache)"], downloadable=True)
        return check_model_folder(folder)
    if _looks_like_folder(model):
        return ModelCheck(False, problems=[f"{model} is not a folder"])
    return ModelCheck(False, problems=[f"{model} is neither a folder nor a hub id like org/name"])


def _looks_like_folder(model: str) -> bool:
    return model.startswith(("/", "~", ".", "\\")) or "\\" in model or ":" in model[:3]


def app_message(message: str, model: str | None = None) -> str:
    """An engine error as the app's user should read it: the cause, then what to do in the app.
    ``model``: the model setting of the run; a folder that cannot load is named with what it lacks."""
    if message.startswith("could not load model") and model and Path(model).expanduser().is_dir():
        check = check_model_folder(model)
        if not check.ok:
            return (f"The model folder {model} cannot be used: {check.text()}. Choose the model's own folder in "
                    f"{MODEL_CONTROLS}, or use {DEMO_CONTROL}.")
    if message.startswith("could not load model"):
        cause = message.split(". Pass a local folder", 1)[0]
        return (f"{cause[0].upper()}{cause[1:]}. Choose the model's folder in {MODEL_CONTROLS} (it holds "
                f"config.json, *.safetensors and the tokenizer), enter a hub id downloaded earlier, or use "
                f"{DEMO_CONTROL}.")
    if "cannot be reached: download it while online" in message:  # a hub id neither cached nor reachable
        cause = message.split(" or pass a local model folder", 1)[0]
        return f"{cause[0].upper()}{cause[1:]}, or choose a model folder ({MODEL_CONTROLS})."
    if "supported families are" in message:
        return f"{message}. Choose another model in {MODEL_CONTROLS}."
    return message
