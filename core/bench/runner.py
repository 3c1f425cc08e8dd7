"""Methods and the benchmark: every page of every document, every method, one run.

Each document is rendered and drafted **once** first (timed): the drafts split the reference into
pages and place each region's reference. Then every method converts the document in one document
run, as ``hsd convert`` does (``core.run``, its page decoder the replay hook of
``core.bench.document_run``), with the same regions, so ratios compare like with like: the run is
handed the drafts made first, at once, and a page's wall-clock is the run's seconds for it plus
the drafter's first seconds, except for ``ar``, which reads no drafts and is not charged them.
Oracle methods use the drafter's boxes with reference text (``oracle_regions``); they are charged
the drafter's time too (the boxes come from it).

Where a conversion would draft beside the decode (``background_drafting``: auto = the target is on
a GPU; on or off), replay-cost and real runs do as it does: the runs of ``hsd`` and ``page`` read
the pages with the drafter again, beside their own decode, and their wall-clock is the run's alone.
The replay target always drafts first: its passes take no time, so the drafts would arrive after
the page was decoded.

Targets (``--target``):

* ``replay``: ``ReplayTarget``, greedy output = the reference (see ``core.bench.replay``);
* ``replay-cost``: ``CostReplayTarget`` around a real model (``--model``; without one a tiny random
  HunyuanVL on CPU, or a random real-size HunyuanOCR with ``--model hunyuan-ocr-random``), real passes
  of HSD's exact shapes, acceptance from the reference;
* ``real``: the model itself (its own greedy output); the lossless check compares ``hsd`` at tau 1
  with ``ar`` token for token;
* ``simulated-gpu``: ``SimulatedGpuTarget``, replay's acceptance with every pass taking the time of a
  GPU cost model (see ``core.bench.simulated_gpu``; ``gpu_pass_ms``, ``gpu_token_ms``). Each method's
  run drafts the pages again, ahead of and beside the decode as conversions on a GPU do
  (``background_drafting`` auto = on), a page's wall-clock its share of the run,
  ``passes_before_drafts`` how long it decoded without its regions' drafts, ``passes_before_lines``
  without any (an OCR drafter's early lines serve before).

``busy`` processes spin at the normal priority beside the timed runs (``core.bench.busy``: started as
the first document's drafting starts, stopped when the last method's run ends, on an error too); the
run's info records their number and the machine's load average, so busy figures read as such.

Every method record also holds ``decode_cpu_seconds``: the CPU time of the decoding thread
(``time.thread_time``) while the page converted, the engine's own work (the drafter runs on its own
thread; a simulated pass sleeps), and with the simulated GPU ``gpu_seconds``, its simulated passes.
"""

from __future__ import annotations

import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from core import tuning
from core.bench import human_reference as human_side
from core.bench.busy import busy_processes, load_average
from core.bench.document_run import FixedDrafts, PageReference, line_references, run_document
from core.bench.corpus import (NON_TEXT_LABELS, load_corpus, oracle_regions, prepare_reference,
                               region_references, region_spans, split_reference)
from core.bench.metrics import page_teds
from core.bench.replay import ReplayTarget
from core.drafters.base import prepare_drafter
from core.drafters.process import reader_for
from core.engine import Engine, EngineConfig
from core.page_pipeline import render_and_draft
from core.speculative.budget import PassCost
from core.errors import DocumentError, HSDError, HSDWarning
from core.text_distance import text_edit_distance

TARGETS = ("replay", "replay-cost", "real", "simulated-gpu")
DEFAULT_METHODS = "ar,page,regions,hsd,hsd-tau0.75,hsd-oracle"
#: Labels left out of a page's draft text when judging drafts (references leave them out too).
UNJUDGED_LABELS = frozenset({"header", "footer", "page_number"}) | NON_TEXT_LABELS
RANDOM_HUNYUAN = "hunyuan-ocr-random"


@dataclass(frozen=True)
class Method:
    name: str
    mode: str
    tau: float = 1.0
    oracle: bool = False

    @property
    def uses_drafts(self) -> bool:
        return self.mode != "ar"


_METHOD = re.compile(r"^(ar|page|regions|hsd)(?:-tau([0-9.]+))?(-oracle)?$")


def parse_methods(spec: str) -> list[Method]:
    """``"ar,page,hsd-tau0.75,hsd-oracle"`` -> methods. Grammar: ``MODE[-tauT][-oracle]``."""
    out = []
    for name in [s.strip() for s in spec.split(",") if s.strip()]:
        m = _METHOD.match(name)
        if not m:
            raise HSDError(f"unknown method {name!r}; use MODE[-tauT][-oracle] with MODE in ar, page, regions, hsd "
                           "(e.g. hsd-tau0.75, hsd-oracle)")
        tau = float(m.group(2)) if m.group(2) else 1.0
        if not 0.0 < tau <= 1.0:
            raise HSDError(f"{name}: tau must be in (0, 1]")
        out.append(Method(name, m.group(1), tau, bool(m.group(3))))
    if not any(m.name == "ar" for m in out):
        out.insert(0, Method("ar", "ar"))  # every ratio is against ar from the same run
    return out


@dataclass
class BenchConfig:
    corpus: str
    target: str = "replay"
    model: str | None = None
    methods: str = DEFAULT_METHODS
    pages: int | None = None          # at most this many pages in all (documents in name order)
    docs: list[str] | None = None     # only documents whose name starts with one of these
    drafter: str = tuning.DEFAULT_DRAFTER
    dpi: int = tuning.DPI
    max_new_tokens: int = tuning.BENCH_MAX_NEW_TOKENS
    tokenizer: str = "auto"           # replay granularity: auto | qwen | tiny (see replay.base_tokenizer)
    device: str | None = None
    dtype: str | None = None
    cost_layers: int | None = None    # shrink the random real-size model (CPU tests)
    reference_tables: str = "html"    # html: pipe tables in references become HTML (the prompts' convention)
    reference_spaces: str = "collapse"  # collapse: runs of spaces inside lines become one (see corpus)
    background_drafting: str = tuning.DEFAULT_BACKGROUND_DRAFTING  # replay-cost / real: hsd and page draft beside the decode (see below)
    reference_kind: str = "auto"      # human | model:NAME | auto (the model_outputs layout; core.bench.human_reference)
    human_reference: str | None = "auto"  # model outputs: also replay ar/hsd on this corpus's human references
    gpu_pass_ms: float = tuning.SIMULATED_GPU_PASS_MS  # simulated-gpu: a pass's fixed milliseconds (core.bench.simulated_gpu)
    gpu_token_ms: float = tuning.SIMULATED_GPU_TOKEN_MS  # simulated-gpu: milliseconds per token in the pass
    rotate: str = tuning.DEFAULT_ROTATE  # turned pages shown upright, the same image for every method
    busy: int = 0                     # processes spinning beside the timed runs (core.bench.busy)


@dataclass
class RunInfo:
    target: str
    target_detail: str
    tokenizer: str
    drafter: str
    methods: list[str]
    corpus: str
    started: str
    machine: dict = field(default_factory=dict)
    reference_kind: str = "human"     # what the .md files are: human references or a model's outputs
    human_reference: str | None = None  # the human references replayed beside a model's outputs
    busy: int = 0                     # processes spinning beside the timed runs, started and stopped by them
    #: the machine's load average (1, 5, 15 min) as the timed runs start (before the busy processes do)
    #: and end, and its 1-minute figure after each document (name -> figure); None where the system has none
    load_average: dict = field(default_factory=dict)


# --- targets and drafters ------------------------------------------------------------------------


def make_target(cfg: BenchConfig):
    """(target, description, tokenizer name)."""
    from core.bench.replay import CostReplayTarget, ReplayTarget, ReplayTokenizer, base_tokenizer

    if cfg.target not in TARGETS:
        raise HSDError(f"unknown target {cfg.target!r}; choose one of {', '.join(TARGETS)}")
    if cfg.target in ("replay", "simulated-gpu"):
        tok = ReplayTokenizer(base_tokenizer(cfg.tokenizer, cfg.model))
    if cfg.target == "replay":
        return ReplayTarget(tok), "replay (greedy output = reference; no network)", tok.name
    if cfg.target == "simulated-gpu":
        from core.bench.simulated_gpu import GpuCostModel, SimulatedGpuTarget

        cost = GpuCostModel(cfg.gpu_pass_ms, cfg.gpu_token_ms)
        return (SimulatedGpuTarget(tok, cost), f"simulated GPU ({cost.describe()}; acceptance replays the "
                "reference; a simulation, no GPU ran)", tok.name)
    real, detail = _real_target(cfg)
    if cfg.target == "real":
        return CostReplayTarget(real, replay=False), detail, "model"
    model_dir = cfg.model if cfg.model and Path(cfg.model).is_dir() and cfg.tokenizer == "model" else None
    tok = ReplayTokenizer(base_tokenizer(cfg.tokenizer, model_dir))
    return CostReplayTarget(real, tok), f"replay-cost over {detail}", tok.name


def _real_target(cfg: BenchConfig):
    import tempfile

    from core.targets.loader import load_target

    if cfg.model == RANDOM_HUNYUAN:
        from core.bench.replay import real_size_hunyuan_target

        t = real_size_hunyuan_target(cfg.device or "cuda", cfg.dtype or "bf16", layers=cfg.cost_layers,
                                     vision_layers=cfg.cost_layers)
        n = sum(p.numel() for p in t.model.parameters())
        return t, f"random HunyuanOCR-size model ({n / 1e9:.2f} B parameters, {t.dtype}, {t.device})"
    model = cfg.model
    if model is None:  # a tiny random model: every code path runs, on CPU, in seconds
        from core.targets.tiny import build_tiny_model

        model = str(build_tiny_model(Path(tempfile.mkdtemp(prefix="hsd-bench-tiny-")), "hunyuan_vl"))
        label = "tiny random hunyuan_vl"
    else:
        label = model
    t = load_target(model, device=cfg.device, dtype=cfg.dtype)
    return t, f"{label} ({t.dtype}, {t.device})"


def make_drafter(spec: str):
    """The drafter ``spec`` names (``core.drafters.parse_drafter_spec``); ``auto`` falls back to
    ``textlayer`` where the OCR drafter cannot run (its packages missing), so a born-digital corpus
    can still be measured."""
    from core.drafters import get_drafter, parse_drafter_spec

    name, options = parse_drafter_spec(spec)
    try:
        return get_drafter(spec), spec
    except Exception as exc:  # ModuleNotFoundError inside the registry, DrafterUnavailableError
        if name != "auto" or options:
            raise
        print(f"hsd bench: drafter 'auto' unavailable ({type(exc).__name__}: {exc}); using 'textlayer'",
              file=sys.stderr)
        return get_drafter("textlayer"), "textlayer (auto unavailable)"


# --- the loop ------------------------------------------------------------------------------------


def draft_text(regions, left_out=UNJUDGED_LABELS) -> str:
    """A page's drafts as one text in reading order, regions labelled ``left_out`` left out."""
    return "\n\n".join(r.text for r in regions if r.label not in left_out and r.text.strip())


def splitting_text(regions) -> str:
    """The draft text a page's reference is cut by (``split_reference``): the judged regions',
    every region's where those hold none (a page of headers and page numbers alone)."""
    return draft_text(regions) or draft_text(regions, ())


def run_bench(cfg: BenchConfig, log: Callable[[str], None] | None = None,
              on_page: Callable[[dict, dict], None] | None = None) -> dict:
    """Run every method on every page; returns ``{"info": ..., "pages": [record, ...]}``.

    ``on_page(info, record)`` is called as each page finishes (the CLI appends it to ``pages.jsonl``,
    so an interrupted run keeps its finished pages)."""
    import datetime
    import os
    import platform

    log = log or (lambda s: print(s, file=sys.stderr))
    if cfg.busy < 0:
        raise HSDError(f"busy processes must be 0 or more, got {cfg.busy}")
    methods = parse_methods(cfg.methods)
    docs = load_corpus(cfg.corpus, cfg.docs)
    if not docs:
        raise HSDError(f"{cfg.corpus}: no pairs/NAME.pdf with a NAME.md beside it")
    target, detail, tok_name = make_target(cfg)
    drafter, drafter_name = make_drafter(cfg.drafter)
    machine = {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        import torch

        machine["torch"] = torch.__version__
        if torch.cuda.is_available():
            machine["gpu"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
    kind = human_side.reference_kind(cfg.corpus, cfg.reference_kind)
    # the human-reference side replays pass counts: the simulated GPU's clock would only double the run
    human = (human_side.human_reference_folder(cfg.corpus, kind, cfg.human_reference)
             if cfg.target not in ("real", "simulated-gpu") else None)
    info = RunInfo(cfg.target, detail, tok_name, drafter_name, [m.name for m in methods], str(cfg.corpus),
                   datetime.datetime.now().isoformat(timespec="seconds"), machine, kind,
                   str(human) if human else None)
    records = []
    budget = cfg.pages
    pass_cost = PassCost()  # what a pass costs on this target, learned over the whole run
    skipped = []
    info.busy = cfg.busy
    load = info.load_average = {"start": load_average(), "documents": {}}
    with busy_processes(cfg.busy):  # the timed runs, beside the busy work asked for
        for doc in docs:
            if budget is not None and budget <= 0:
                break
            if doc.problem:
                skipped.append({"doc": doc.name, "reason": doc.problem})
                warnings.warn(f"{doc.name}: skipped: {doc.problem}", HSDWarning, stacklevel=2)
                continue
            try:
                records += _run_document(doc, cfg, methods, target, drafter, budget, log,
                                         (lambda rec: on_page(asdict(info), rec)) if on_page else None, pass_cost,
                                         human)
            except DocumentError as exc:  # an empty or damaged PDF: the others are still benchmarked
                skipped.append({"doc": doc.name, "reason": str(exc)})
                warnings.warn(f"{doc.name}: skipped: {exc}", HSDWarning, stacklevel=2)
                continue
            finally:
                now = load_average()
                load["documents"][doc.name] = now and now[0]
            if budget is not None:
                budget -= sum(1 for r in records if r["doc"] == doc.name)
        load["end"] = load_average()
    if not records:
        reasons = "; ".join(f"{s['doc']}: {s['reason']}" for s in skipped[:3])
        raise HSDError(f"{cfg.corpus}: no document could be benchmarked ({reasons})")
    return {"info": asdict(info), "config": asdict(cfg), "pages": records, "skipped": skipped}


def _run_document(doc, cfg, methods, target, drafter, budget, log, on_page=None, pass_cost=None,
                  human=None) -> list[dict]:
    """Draft the document's pages once (timed; their drafts split the reference into pages), then
    every method converts them in one document run (``_run_as_documents``); beside a model's
    outputs, ``ar`` and ``hsd`` again against the human reference (``core.bench.human_reference``)."""
    from core.documents import open_document

    reference = prepare_reference(doc.reference, cfg.reference_tables, cfg.reference_spaces)
    if isinstance(target, ReplayTarget):  # replay targets number a document's tokens afresh
        target.start_document()
    rereads = _drafts_again(cfg, target)
    with open_document(doc.pdf, rotate=cfg.rotate) as document:
        n = document.page_count
        prepared, loads = [], []  # loads: seconds loading the drafter's models, kept out of draft_s
        for i in range(n):
            page = document.page(i)
            # the drafter's models (RapidOCR's, the layout's) load untimed, as the target does: else the
            # first scan of a run carried a few seconds of model loading
            t0 = time.perf_counter()
            try:
                prepare_drafter(drafter, page)
                if rereads:  # those document runs draft in the drafting process
                    prepare_drafter(reader_for(drafter), page)
            except Exception:  # drafting below meets the same failure and records it
                pass
            loads.append(time.perf_counter() - t0)
            # the page pipeline's render and draft (a drafter crash costs speed, never the page)
            drafted = render_and_draft(page, cfg.dpi, drafter, background=False)
            prepared.append(PreparedPage(drafted.drafts.result(), drafted.seconds["render"], drafted.seconds["draft"],
                                         drafted.drafts.error, list(drafted.drafts.early_lines())))
    page_texts = [splitting_text(p.regions) for p in prepared]
    page_refs = split_reference(reference, page_texts)
    out = _run_as_documents(doc, cfg, methods, target, drafter, prepared[:budget], page_refs, n, pass_cost)
    human_refs = human_side.human_references(human, doc.name, page_texts, cfg)
    if human_refs is not None:  # the same pages and drafts, replayed against their human reference
        beside = _run_as_documents(doc, cfg, [Method(name, name) for name in human_side.BESIDE_METHODS], target,
                                   drafter, prepared[:budget], human_refs, n, pass_cost, drafts_beside=False)
        for rec, other in zip(out, beside):
            rec["human_reference"] = {key: other[key] for key in ("reference_chars", "reference_tokens", "methods")}
    for i, rec in enumerate(out):
        rec["draft_load_seconds"] = loads[i]
        if on_page:
            on_page(rec)
        _log_page(log, rec, n)
    return out


@dataclass
class PreparedPage:
    """A page as the benchmark drafted it first: its regions, the render's and the drafter's
    seconds, the drafter's error, the early lines it told."""

    regions: list
    render_seconds: float
    draft_seconds: float
    draft_error: str | None
    lines: list


def _log_page(log, rec: dict, n_pages: int) -> None:
    hsd = rec["methods"].get("hsd") or next(iter(rec["methods"].values()))
    log(f"{rec['doc']} p{rec['page']}/{n_pages}: {rec['reference_tokens']} tok, {rec['regions']} regions, "
        + ", ".join(f"{k} {v['forward_passes']}fp/{v['wall_seconds']:.2f}s" for k, v in rec["methods"].items())
        + (f" [hsd mal {hsd['mean_accepted_length']:.2f}]" if "hsd" in rec["methods"] else ""))


def _run_as_documents(doc, cfg, methods, target, drafter, prepared, page_refs, n_pages, pass_cost,
                      drafts_beside: bool = True) -> list[dict]:
    """Every method converts the document's first ``len(prepared)`` pages in one document run
    (``core.bench.document_run``: ``core.run`` with the replay hook as its page decoder), a page's
    wall-clock the run's seconds from the page before to its own. ``prepared``: the pages as drafted
    first (their drafts split the reference and place the regions' references).

    Which drafter a method's run reads with: none for ``ar``; the oracle regions for an oracle
    method; on the simulated GPU, and where ``hsd`` and ``page`` draft beside their decode
    (``replay-cost`` and ``real`` with ``background_drafting``; ``drafts_beside``), the drafter
    itself, reading every page again as a user's run would; else the drafts made first, handed
    over at once, the drafter's seconds then added to the page's wall-clock."""
    references, oracles, records, first = {}, {}, [], {}
    for i, p in enumerate(prepared):
        spans = region_spans(page_refs[i], p.regions)
        references[i + 1] = PageReference(page_refs[i], region_references(page_refs[i], p.regions, spans),
                                          line_references(page_refs[i], p.lines))
        oracles[i + 1] = oracle_regions(page_refs[i], p.regions, spans)
        first[i + 1] = p.regions
        records.append(_page_record(doc, i, n_pages, p, spans, page_refs[i], cfg, target))
    oracle_references = {k: PageReference(ref.page, [r.text for r in oracles[k]]) for k, ref in references.items()}
    outputs, texts = [{} for _ in records], [{} for _ in records]
    for m in methods:
        config = EngineConfig(mode=m.mode, tau=m.tau, max_new_tokens=cfg.max_new_tokens, dpi=cfg.dpi,
                              background_drafting=_background_drafting(cfg), rotate=cfg.rotate)
        rereads = (m.uses_drafts and not m.oracle and _drafts_again(cfg, target)
                   and (cfg.target == "simulated-gpu" or (drafts_beside and m.mode in ("hsd", "page"))))
        if m.uses_drafts and not m.oracle and not rereads:
            config = replace(config, background_drafting="off")  # the drafts made first, at once
        method_drafter = (drafter if rereads else FixedDrafts({}) if not m.uses_drafts  # ar: none
                          else FixedDrafts(oracles) if m.oracle else FixedDrafts(first))
        run = run_document(doc.pdf, config, target, method_drafter, oracle_references if m.oracle else references,
                           f"1-{len(prepared)}", pass_cost)
        records[0].setdefault("document_run_seconds", {})[m.name] = run.seconds
        for i, rec in enumerate(records):
            measure = run.pages.get(i + 1)
            charged = prepared[i].draft_seconds if cfg.target != "simulated-gpu" and m.uses_drafts and not rereads else 0.0
            rec["methods"][m.name] = _method_record(m, measure, references[i + 1].page, charged,
                                                    prepared[i].regions if rereads else None)
            if measure is not None and measure.result is not None:
                outputs[i][m.name], texts[i][m.name] = list(measure.result.output_tokens), measure.result.markdown
    for i, rec in enumerate(records):
        _compare_methods(rec, methods, outputs[i], texts[i], replay=cfg.target != "real")
    return records


def _drafts_again(cfg: BenchConfig, target) -> bool:
    """Whether document runs read pages with the drafter again: on the simulated GPU, and where
    ``replay-cost`` and ``real`` draft beside their decode (``background_drafting``)."""
    if cfg.target == "simulated-gpu":
        return True
    return cfg.target in ("replay-cost", "real") and Engine(
        EngineConfig(background_drafting=_background_drafting(cfg)), target=target).drafts_beside_decode


def _background_drafting(cfg: BenchConfig) -> str:
    """The engines' ``background_drafting``: on a simulated GPU, auto means on (its target sits on the
    CPU, where ``auto`` drafts first, but it stands for a GPU, whose passes leave the CPU to the drafter)."""
    if cfg.target == "simulated-gpu" and cfg.background_drafting == "auto":
        return "on"
    return cfg.background_drafting


def _page_record(doc, index, n_pages, prepared: PreparedPage, spans, page_ref, cfg, target) -> dict:
    """A page's record before its methods run: the page, its drafts and how they read."""
    replay, regions, text = cfg.target != "real", prepared.regions, draft_text(prepared.regions)
    return {
        "doc": doc.name, "kind": doc.kind, "page": index + 1, "pages": n_pages,
        "regions": len(regions),
        "text_regions": sum(1 for r in regions if r.label not in NON_TEXT_LABELS and r.text.strip()),
        "matched_regions": sum(1 for s in spans if s is not None),
        "reference_chars": len(page_ref),
        "reference_tokens": len(target.encode(page_ref)) if replay else None,
        "render_seconds": prepared.render_seconds, "draft_seconds": prepared.draft_seconds,
        "draft_error": prepared.draft_error,
        "drafts": {"edit_distance": text_edit_distance(text, page_ref), "teds": page_teds(text, page_ref)},
        "methods": {},
    }


def _compare_methods(rec: dict, methods, outputs: dict, texts: dict, replay: bool) -> None:
    """How far ``hsd`` at tau < 1 wrote from tau 1; on a real target, whether hsd equals ar."""
    base = texts.get("hsd")
    for m in methods:
        r = rec["methods"][m.name]
        if m.mode == "hsd" and m.tau < 1.0 and not m.oracle and base is not None and m.name in texts:
            r["distance_to_tau1"] = text_edit_distance(texts[m.name], base)
    if not replay and "ar" in outputs and "hsd" in outputs:
        rec["lossless"] = outputs["hsd"] == outputs["ar"]


def _method_record(m: Method, measure, page_ref, charged: float, first_regions) -> dict:
    """A method's record of one page from its document run's ``measure``: ``charged``, the drafter's
    seconds added to its wall-clock where it was handed the drafts made first; ``first_regions``,
    those drafts where its run read the page again (whether it found the same regions)."""
    res = measure.result if measure is not None else None
    if res is None:
        return {"error": "not converted", "forward_passes": 0, "wall_seconds": 0.0, "mean_accepted_length": 0.0}
    s = res.stats
    record = {
        "forward_passes": s.forward_passes,
        "prefill_passes": s.prefill_passes,
        "stage1_passes": s.stage1_passes,
        "stage2_passes": s.stage2_passes,
        "decode_passes": s.stage1_passes + s.stage2_passes,
        "generated_tokens": s.generated_tokens,
        "drafted_tokens": s.drafted_tokens,
        "accepted_tokens": s.accepted_tokens,
        "tree_passes": s.tree_passes,
        "mean_accepted_length": s.mean_accepted_length,
        "passes_before_drafts": s.passes_before_drafts,
        "passes_before_lines": s.passes_before_lines,
        "lines_read": s.lines_read,
        "regions_read_by_lines": s.regions_read_by_lines,
        "stop_reason": s.stop_reason,
        "engine_seconds": s.seconds.get("total", 0.0),
        "seconds": dict(s.seconds),
        "wall_seconds": measure.wall_seconds + charged,
        "charged_draft_seconds": charged,  # the drafts made first, added: outside its document run's seconds
        "gains": dict(sorted(Counter(measure.gains).items())),
        "edit_distance": text_edit_distance(res.markdown, page_ref),
        "teds": page_teds(res.markdown, page_ref),
        "error": res.error,
        "decode_cpu_seconds": measure.cpu_seconds,
    }
    if measure.gpu_seconds is not None:
        record["gpu_seconds"] = measure.gpu_seconds
    if first_regions is not None:
        record["background_drafting"] = {
            "draft_seconds": s.seconds.get("draft", 0.0),
            "same_regions": measure.regions is not None
            and [x.to_dict() for x in measure.regions] == [x.to_dict() for x in first_regions]}
    return record
