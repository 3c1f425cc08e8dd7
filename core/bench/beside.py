"""What a corpus's references are, and the same pages replayed against another reference beside them.

A corpus's ``.md`` files are either **human references** (``../shared/corpus/pairs``) or **a model's
recorded outputs** (``../shared/corpus/model_outputs/NAME/pairs``: what a real document VLM wrote for
the page, with its style and its mistakes). Under replay the target's output *is* the reference, so
the report must say which: ``reference_kind`` is ``human`` or ``model:NAME``. ``auto`` reads the
layout: a corpus folder inside a ``model_outputs`` folder holds model outputs, named after the folder.

Where the pages of a model-output corpus also have a human reference (the ``model_outputs`` layout's
``../../pairs/NAME.md``, or ``--human-reference DIR``), ``ar`` and ``hsd`` are replayed against it too,
on the same render and the same drafts, each with its own engine per document (as a conversion
runs), so the report shows both targets side by side from one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Methods replayed against the human reference beside a model-output run.
BESIDE_METHODS = ("ar", "hsd")


def reference_kind(corpus: str | Path, choice: str = "auto") -> str:
    """``human`` or ``model:NAME`` for ``corpus`` (see the module docstring)."""
    if choice in ("human",) or choice.startswith("model:"):
        if choice == "model:":
            from core.errors import HSDError

            raise HSDError("--reference-kind model:NAME needs the model's name")
        return choice
    if choice != "auto":
        from core.errors import HSDError

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


@dataclass
class HumanSide:
    """Per document: the human reference split over the document's pages, and one engine per method."""

    page_refs: list[str]
    engines: dict


def start_document(folder: Path | None, doc_name: str, page_texts: list[str], cfg, target, pass_cost):
    """The human side of one document, or None where it has no human reference."""
    if folder is None:
        return None
    md = folder / f"{doc_name}.md"
    if not md.is_file():
        return None
    from core.bench.corpus import prepare_reference, split_reference
    from core.engine import Engine, EngineConfig

    reference = prepare_reference(md.read_text(encoding="utf-8"), cfg.reference_tables, cfg.reference_spaces)
    engines = {}
    for name in BESIDE_METHODS:
        engines[name] = Engine(EngineConfig(mode=name, max_new_tokens=cfg.max_new_tokens, dpi=cfg.dpi,
                                            background_drafting="off"),
                               target=target, drafter=None, pass_cost=pass_cost)
        engines[name].start_document(doc_name)
    return HumanSide(split_reference(reference, page_texts), engines)


def run_page(side: HumanSide, index: int, image, regions, page, target, method_record) -> dict:
    """``ar`` and ``hsd`` on one page with the human reference as the replay target's output.
    ``method_record(name, result, error, page_ref)`` builds each method's record (the runner's)."""
    from core.bench.corpus import region_references, region_spans

    page_ref = side.page_refs[index]
    refs = region_references(page_ref, regions, region_spans(page_ref, regions))
    out = {"reference_chars": len(page_ref), "reference_tokens": len(target.encode(page_ref)), "methods": {}}
    for name, engine in side.engines.items():
        target.set_page(page_ref, refs)
        try:
            res, error = engine.convert_image(image, regions, page.width, page.height, index + 1), None
        except Exception as exc:  # recorded like the main methods' failures
            res, error = None, f"{type(exc).__name__}: {exc}"
        out["methods"][name] = method_record(name, res, error, page_ref)
    return out
