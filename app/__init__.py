"""HSD Studio, the desktop app (PySide6). It talks to ``core`` only through the engine's API and
events; ``core`` never imports it. Entry point: ``app.main:main`` (``hsd-studio [FILE ...]``)."""

try:
    from app.worker import keep_bools_alive as _keep_bools_alive
except ModuleNotFoundError as _missing:  # without PySide6 only the argument parsing of app.main runs
    if not (_missing.name or "").startswith(("PySide6", "shiboken6")):
        raise
else:
    _keep_bools_alive()  # before any window emits a signal
