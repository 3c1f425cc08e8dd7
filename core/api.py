"""The one door into core for the command line, the app and Ray.

- ``convert_document(config, input, output, ...)``: one document to Markdown, resuming from the
  pages an earlier run finished, with an event callback and a cancel check.
- ``engine_config(args)``, ``settings_of(config)``: the engine's configuration from a ``convert``
  command line, and what decides a converted page (the resume key, the statistics' settings).
- ``output_paths``, ``distinct_inputs``, ``refuse_unsafe_outputs``: output naming and the checks
  that keep a run from destroying a file (``core.outputs``).
- ``quiet_libraries()``: library progress bars off, for a command line or a worker process.
- The pieces, for a caller that drives pages itself (the app's worker): ``open_document``,
  ``DocumentOutput``, ``convert_with_resume``, ``page_markdown``... (see ``__all__``).

Importing this module is cheap: what needs torch or PyMuPDF is imported on first use, so the
command line can check its arguments and inputs before loading either.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Callable

from core.outputs import distinct_inputs, output_paths, refuse_unsafe_outputs

#: Names served from other modules on first use: name -> module.
_LAZY = {
    "Engine": "core.engine", "EngineConfig": "core.engine", "MODES": "core.engine", "clean_draft": "core.engine",
    "DRAFTER_NAMES": "core.drafters", "DEFAULT_DRAFTER": "core.drafters", "get_drafter": "core.drafters",
    "drafter_spec": "core.drafters", "SCAN_LAYOUTS": "core.drafters", "OCR_DRAFTERS": "core.drafters",
    "open_document": "core.documents", "parse_page_range": "core.documents",
    "DocumentOutput": "core.export", "page_markdown": "core.export", "assemble": "core.export",
    "atomic_write_text": "core.export", "figure_filename": "core.export", "FIGURE_LABELS": "core.export",
    "images_dir_for": "core.export",
    "convert_with_resume": "core.resume",
    "document_stats": "core.stats", "document_totals": "core.stats",
    "build_tiny_model": "core.targets.tiny", "FAMILY_MODULES": "core.targets.profiles",
    "DEFAULT_MODEL": "core.targets.loader",
    # the benchmark's replay stand-in, for the app's screenshots (real Markdown without a real model)
    "ReplayTarget": "core.bench.replay", "ReplayTokenizer": "core.bench.replay", "base_tokenizer": "core.bench.replay",
    "prepare_reference": "core.bench.corpus", "split_reference": "core.bench.corpus",
    "region_references": "core.bench.corpus", "region_spans": "core.bench.corpus",
}

__all__ = ["convert_document", "engine_config", "settings_of", "quiet_libraries", "output_paths",
           "distinct_inputs", "refuse_unsafe_outputs", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def engine_config(args):
    """The engine configuration of a ``convert`` command line (shared with ``--ray``)."""
    from core.drafters import drafter_spec
    from core.engine import EngineConfig

    return EngineConfig(model=args.model, mode=args.mode, tau=args.tau,
                        drafter=drafter_spec(args.drafter, getattr(args, "scan_layout", "cdla")),
                        dpi=args.dpi, device=args.device, dtype=args.dtype,
                        max_new_tokens=args.max_new_tokens, trust_remote_code=args.trust_remote_code,
                        background_drafting=getattr(args, "background_drafting", "auto"),
                        stage1_skip_sources=tuple(getattr(args, "stage1_skip", ())))


def settings_of(config) -> dict:
    """What decides the output: pages converted under other settings are not reused."""
    return {"model": str(config.model or "default"), "mode": config.mode, "tau": config.tau,
            "drafter": config.drafter, "dpi": config.dpi, "device": config.device or "auto",
            "dtype": config.dtype or "auto", "max_new_tokens": config.max_new_tokens}


def quiet_libraries() -> None:
    """Library progress bars and advice (weight loading, shard writing) are noise in a CLI.

    Said through the environment, which transformers and huggingface_hub read when they are
    imported, so that nothing heavy is imported here. Where transformers is already imported (a
    worker process), its progress bars are turned off directly."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "transformers" in sys.modules:
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # transformers changed: progress bars are harmless
            pass


def convert_document(config, input_path, output_path, *, engine=None, pages: str | None = None,
                     password: str | None = None, fresh: bool = False, overwrite: bool = True,
                     on_event: Callable[[object], None] | None = None,
                     should_cancel: Callable[[], bool] | None = None,
                     on_page: Callable[[object, bool], None] | None = None,
                     on_start: Callable[[object, list[int]], None] | None = None,
                     before_page: Callable[[int, int], None] | None = None) -> dict:
    """Convert the document at ``input_path`` into ``output_path`` (Markdown, figures, resume
    folder) and return its statistics (``core.stats.document_stats``).

    ``config``: an ``EngineConfig``. ``engine``: the ``Engine`` to use, or ``engine(position)``
    giving it at the first page that needs converting (a document whose pages are all saved loads
    no model); default: ``Engine(config)``. ``pages``: a range such as ``1-3,7``. ``fresh``: ignore
    saved pages. ``overwrite=False``: refuse to replace a figure file this tool did not write.
    ``on_event``: the engine's progress events; ``should_cancel``: checked between pages and
    passes (``CancelledError``). ``on_start(output, indices)`` once the document is open;
    ``before_page(position, index)`` just before a page is converted (not for saved pages);
    ``on_page(result, reused)`` after each page, in order.
    """
    from core.documents import open_document, parse_page_range
    from core.export import DocumentOutput
    from core.resume import convert_with_resume
    from core.stats import document_stats

    settings = settings_of(config)
    input_path, output_path = Path(input_path), Path(output_path)
    if engine is None:
        from core.engine import Engine

        made = []
        engine_for = lambda _: made[0] if made else made.append(Engine(config)) or made[0]  # noqa: E731
    elif callable(engine) and not hasattr(engine, "convert_document"):
        engine_for = engine
    else:
        engine_for = lambda _: engine  # noqa: E731
    with open_document(input_path, password=password) as doc:
        indices = parse_page_range(pages, doc.page_count)
        output = DocumentOutput(input_path, output_path, settings, resume=not fresh, overwrite=overwrite)
        if on_start is not None:
            on_start(output, indices)
        results = []
        for _, done, reused in convert_with_resume(doc, indices, output, engine_for, on_event=on_event,
                                                   should_cancel=should_cancel, before_page=before_page):
            results.append(done)
            if on_page is not None:
                on_page(done, reused)
        output.write_markdown(results)
    return document_stats(str(input_path), str(output_path), settings, results)
