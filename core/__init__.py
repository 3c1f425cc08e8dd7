"""HSD Studio core: documents, drafters, targets, the speculative engine and the CLI.

This package never imports Qt; the desktop app in ``app/`` builds on it.
"""

__version__ = "0.1.0"
