"""The target-model layer: load a document VLM and drive it for speculative verification.

``load_target`` gives a ``Target`` with ``prefill`` (image + prompt into a KV cache) and ``forward``
(many new tokens per row under an explicit mask). ``core.targets.kv`` edits the caches;
``core.targets.tiny`` builds tiny random models of the supported families for demos and tests.
"""

from core.targets.base import Prefill, Target
from core.targets.loader import DEFAULT_MODEL, load_target

__all__ = ["DEFAULT_MODEL", "Prefill", "Target", "load_target"]
