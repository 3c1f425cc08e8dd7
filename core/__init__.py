"""HSD Studio core: documents, drafters, targets, the speculative engine and the CLI.

This package never imports Qt; the desktop app in ``app/`` builds on it.
"""

__version__ = "0.1.0"

# torch's CPU threads sleep rather than spin while they wait: set here, before any entry point (the
# CLI, the app, a drafting process, a Ray worker) imports torch, whose OpenMP runtime reads it once.
from core.hardware import calm_cpu_threads  # noqa: E402

calm_cpu_threads()
