"""HSD Studio, the desktop app (PySide6). It talks to ``core`` only through the engine's API and
events; ``core`` never imports it. Entry point: ``app.main:main`` (``hsd-studio [FILE ...]``)."""

from app.worker import keep_bools_alive as _keep_bools_alive  # before any window emits a signal

_keep_bools_alive()
