"""What a corpus's references are, and the same pages replayed against another reference beside them.

A corpus's ``.md`` files are either **human references** (``../shared/corpus/pairs``) or **a model's
recorded outputs** (``../shared/corpus/model_outputs/NAME/pairs``: what a real document VLM wrote for
the page, with its style and its mistakes). Under replay the target's output *is* the reference, so
the report must say which: ``reference_kind`` is ``human`` or ``model:NAME``. ``auto`` reads the
layout: a corpus folder inside a ``model_outputs`` folder holds model outputs, named after the folder.

Where the pages of a model-output corpus also have a human reference (the ``model_outputs`` layout's
``../../pairs/NAME.md``, or ``--human-reference DIR``), ``ar`` and ``hsd`` are replayed against it too,
on the same drafts, each in a document run of its own (as a conversion runs), so the report shows
both targets side by side from one run.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import HSDError

#: Methods replayed against the human reference beside a model-output run.
BESIDE_METHODS = ("ar", "hsd")


def reference_kind(corpus: str | Path, choice: str = "auto") -> str:
    """``human`` or ``model:NAME`` for ``corpus`` (see the module docstring)."""
    if choice == "model:":
        raise HSDError("--reference-kind model:NAME needs the model's name")
    if choice == "human" or choice.startswith("model:"):
        return choice
    if choice != "auto":
        raise HSDError(f"unknown reference kind {choice!r}; use auto, human or model:NAME")
    path = Path(corpus).resolve()
    if path.parent.name == "model_outputs":
        return f"model:{path.name}"
    return "human"


def describe(kind: str) -> str:
    """The report's words for what the replay target writes."""
    if kind.startswith("model:"):
        return f"target output = recorded output of {kind[len('model:'):]}"
    return "target output = human reference"


def human_reference_folder(corpus: str | Path, kind: str, choice: str | None = "auto") -> Path | None:
    """Where the human references of a model-output corpus's pages are, or None.

    ``choice``: a corpus folder (its ``pairs/``), ``none`` / None for no comparison, or ``auto``: the
    ``model_outputs`` layout's ``../../pairs`` where it exists."""
    if choice in (None, "", "none") or not kind.startswith("model:"):
        return None
    if choice != "auto":
        pairs = Path(choice) / "pairs"
        return pairs if pairs.is_dir() else None
    pairs = Path(corpus).resolve().parent.parent / "pairs"
    return pairs if pairs.is_dir() else None


def human_references(folder: Path | None, doc_name: str, page_texts: list[str], cfg) -> list[str] | None:
    """The human reference of document ``doc_name`` in ``folder`` split over its pages (by their
    drafts, ``page_texts``), or None where it has none. The runner replays ``BESIDE_METHODS``
    against it in document runs of their own, on the same drafts."""
    if folder is None:
        return None
    md = folder / f"{doc_name}.md"
    if not md.is_file():
        return None
    from core.bench.corpus import prepare_reference, split_reference

    reference = prepare_reference(md.read_text(encoding="utf-8"), cfg.reference_tables, cfg.reference_spaces)
    return split_reference(reference, page_texts)
