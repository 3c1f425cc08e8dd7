"""The target-model layer: load a document VLM and drive it for speculative verification.

``load_target`` gives a ``Target`` with ``prefill`` (image + prompt into a KV cache) and ``forward``
(many new tokens per row under an explicit mask). ``core.targets.kv`` edits the caches;
``core.targets.tiny`` builds tiny random models of the supported families for demos and tests.

The names below are imported on first use: importing a light module of this package
(``families``, ``loader``'s folder checks) must not import torch.
"""

import importlib

_LAZY = {"Prefill": "core.targets.base", "Target": "core.targets.base",
         "DEFAULT_MODEL": "core.targets.loader", "load_target": "core.targets.loader"}

__all__ = ["DEFAULT_MODEL", "Prefill", "Target", "load_target"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core.targets' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
