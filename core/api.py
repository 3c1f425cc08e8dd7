"""The one door into core for the command line, the app and Ray.

- ``convert_document(request, engine=None, should_cancel=None)``: one document to Markdown (figures,
  the resume folder), resuming from the pages an earlier run finished; iterate the run it returns
  for its events (``core.events``), in order. ``ConversionRequest`` says what to convert.
- ``engine_config(args)``, ``settings_of(config)``: the engine's configuration from a ``convert``
  command line, and what decides a converted page (the resume key, the statistics' settings).
- ``output_paths``, ``distinct_inputs``, ``refuse_unsafe_outputs``: output naming and the checks
  that keep a run from destroying a file (``core.outputs``).
- ``quiet_libraries()``: library progress bars off, for a command line or a worker process.
- What the app shows and exports: ``page_markdown``, ``assemble``, ``DocumentOutput``,
  ``document_stats``... (see ``__all__``); the exports of a finished document (``core.exports``:
  ``FinishedDocument``, ``export_document``, ``export_targets``, and ``markdown_reader``, the Markdown
  parser they and the app's preview share), the user's page edits
  (``PageEdits``) and the resume folder's ``forget_page``; the GPU memory cap (``parse_memory``).
- Where the model departed from the page's text (``core.review``): ``review_page`` (a page's
  ``Departure`` list, or why none is listed), ``review_document``, ``summary_line``, and the
  ``--review`` report (``refuse_unsafe_review``, ``write_review``).
- One region of a converted page read again (``core.region_again``): ``convert_region_again`` (a
  ``RegionAgainRequest``: the crop read with the family's region request, the page's Markdown given
  the reading in the region's place and kept as the page's edit), or its two steps for a caller that
  reads on one thread and places on another (``read_region_again``, ``place_reading``); the stretch of
  the page's Markdown a region owns, which the app selects and a reading replaces (``region_span``,
  from the ranges its draft accounts for, ``region_ranges``).

Importing this module is cheap, so that the command line checks its arguments and inputs before
torch or PyMuPDF load: the names that need them (the engine, documents, models) are imported on
first use, each by an ordinary import in ``__getattr__`` below.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from core.drafters import DEFAULT_DRAFTER, DRAFTER_NAMES, OCR_DRAFTERS, SCAN_LAYOUTS, drafter_spec, get_drafter
from core.drafters.normalize import clean_draft_text as clean_draft
from core.edits import PageEdits
from core.export import (DocumentOutput, assemble, atomic_write_text, figure_filename, images_dir_for,
                         page_markdown, work_dir_for)
from core.exports import DESCRIPTIONS as EXPORT_DESCRIPTIONS, FORMATS as EXPORT_FORMATS
from core.exports import FinishedDocument, document_payload, export_document
from core.exports.markdown_parse import markdown_reader
from core.hardware import MemoryCap, parse_memory
from core.outputs import (EXPORT_PATTERN, check_output_target, distinct_inputs, export_targets, output_paths,
                          refuse_unsafe_outputs)
from core.page_store import forget_page, saved_settings
from core.region_again import (RegionAgain, RegionAgainRequest, RegionPlacement, RegionReading, convert_region_again,
                               place_reading, read_region_again, region_ranges, region_span)
from core.results import FIGURE_LABELS
from core.review import (Departure, PageReview, refuse_unsafe_review, review_document, review_page, summary_line,
                         write_review)
from core.run import ConversionRequest, DocumentRun, convert_document, settings_of
from core.stats import document_stats, document_totals, format_duration
from core.tuning import DEFAULT_ENGINE, DEFAULT_MODEL

if TYPE_CHECKING:  # imported on first use (see ``__getattr__``): they need torch or PyMuPDF
    from core.documents import open_document, parse_page_range, release_render_caches
    from core.engine import MODES, Engine, EngineConfig
    from core.targets.profiles import FAMILY_MODULES
    from core.targets.tiny import build_tiny_model

__all__ = ["ConversionRequest", "DocumentRun", "convert_document", "engine_config", "settings_of",
           "quiet_libraries", "output_paths", "distinct_inputs", "refuse_unsafe_outputs",
           "Engine", "EngineConfig", "MODES", "DEFAULT_MODEL", "FAMILY_MODULES", "build_tiny_model",
           "DRAFTER_NAMES", "DEFAULT_DRAFTER", "OCR_DRAFTERS", "SCAN_LAYOUTS", "drafter_spec", "get_drafter",
           "clean_draft", "open_document", "parse_page_range", "release_render_caches", "DocumentOutput",
           "page_markdown", "assemble", "atomic_write_text", "figure_filename", "images_dir_for", "FIGURE_LABELS",
           "document_stats", "document_totals", "format_duration",
           "PageEdits", "EXPORT_FORMATS", "EXPORT_DESCRIPTIONS", "EXPORT_PATTERN", "FinishedDocument",
           "document_payload", "export_document", "export_targets", "check_output_target", "work_dir_for",
           "markdown_reader", "forget_page", "saved_settings", "MemoryCap", "parse_memory",
           "Departure", "PageReview", "review_page", "review_document", "summary_line", "write_review",
           "refuse_unsafe_review", "RegionAgainRequest", "RegionAgain", "RegionReading", "RegionPlacement",
           "convert_region_again", "read_region_again", "place_reading", "region_ranges", "region_span"]


def __getattr__(name: str):
    """The names that need torch or PyMuPDF, imported when first asked for."""
    if name in ("Engine", "EngineConfig", "MODES"):
        from core import engine as module
    elif name in ("open_document", "parse_page_range", "release_render_caches"):
        from core import documents as module
    elif name == "FAMILY_MODULES":
        from core.targets import profiles as module
    elif name == "build_tiny_model":
        from core.targets import tiny as module
    else:
        raise AttributeError(f"module 'core.api' has no attribute {name!r}")
    value = globals()[name] = vars(module)[name]
    return value


def engine_config(args):
    """The engine configuration of a ``convert`` command line (shared with ``--ray``)."""
    from core.engine import EngineConfig

    return EngineConfig(model=args.model, mode=args.mode, tau=args.tau,
                        drafter=drafter_spec(args.drafter, args.scan_layout, args.ocr_workers, args.ocr_device),
                        dpi=args.dpi, device=args.device, dtype=args.dtype,
                        max_gpu_memory=getattr(args, "max_gpu_memory", None),
                        engine=getattr(args, "engine", DEFAULT_ENGINE),
                        max_new_tokens=args.max_new_tokens, trust_remote_code=args.trust_remote_code,
                        background_drafting=args.background_drafting, rotate=args.rotate,
                        stage1_skip_sources=tuple(args.stage1_skip))


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
