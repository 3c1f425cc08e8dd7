"""The Ray options of ``hsd convert`` and the ``--ray`` run (``core.commands.convert`` calls in; this
module talks to core through ``core.api`` only, as the single-machine path does)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from core import tuning
from core.errors import one_line


def add_arguments(parser) -> None:
    """Options that only matter with ``--ray`` (``--ray`` itself is declared by ``convert``)."""
    g = parser.add_argument_group("Ray (with --ray; see docs/scale-out.md)")
    g.add_argument("--ray-actors", type=int, default=None, metavar="N",
                   help="model actors, one model each (default: one per GPU in the cluster, else 1)")
    g.add_argument("--ray-gpus-per-actor", type=float, default=tuning.RAY_GPUS_PER_ACTOR, metavar="F",
                   help=f"GPU share per model actor; 0.5 puts two models on each GPU "
                        f"(default {tuning.RAY_GPUS_PER_ACTOR:g})")
    g.add_argument("--ray-batch-size", type=int, default=tuning.RAY_PAGES_AHEAD, metavar="N",
                   help=f"pages rendered ahead of the one a model actor decodes (default {tuning.RAY_PAGES_AHEAD})")
    g.add_argument("--ray-retries", type=int, default=tuning.RAY_RETRIES, metavar="N",
                   help="further attempts of a page that fails before it is recorded as failed "
                        f"(default {tuning.RAY_RETRIES})")
    g.add_argument("--ray-cpus-per-actor", type=float, default=tuning.RAY_CPUS_PER_ACTOR, metavar="N",
                   help=f"CPUs reserved per model actor (default {tuning.RAY_CPUS_PER_ACTOR:g})")


def warn_damaged(inputs, password) -> None:
    """One ``hsd: warning:`` line per damaged input (those that cannot be opened at all are
    reported by the run, which opens them again)."""
    from core.documents import check_document
    from core.errors import HSDError

    for path in inputs:
        try:
            check_document(path, password)
        except HSDError:
            continue


_ADDRESS = re.compile(r"^(local|auto|(ray|ray\+\w+|https?)://\S+|[\w.\-]+:\d+)$")


def split_address(value: str, inputs: list[str]) -> tuple[str, list[str]]:
    """``--ray`` takes an optional ADDRESS, so ``--ray in.pdf ...`` hands argparse's first input to
    ``--ray``: a value that is not an address but an existing path is given back to the inputs."""
    if value != "local" and not _ADDRESS.match(value) and Path(value).exists():
        return "local", [value, *inputs]
    return value, inputs


def run(args) -> int:
    """``hsd convert --ray [ADDRESS] INPUT... -o OUT``: same output, resume rules, statistics and
    exit codes as the single-machine path; folders given as inputs contribute their PDFs and images."""
    from core.api import distinct_inputs, engine_config, output_paths, refuse_unsafe_outputs
    from core.errors import HSDError
    from core.scale.jobs import expand_inputs

    address, inputs = split_address(args.ray, list(args.inputs))
    if not inputs:
        raise HSDError(f"convert needs at least one INPUT (is {args.ray!r} meant as one? it does not exist)"
                       if address != "local" else "convert needs at least one INPUT")
    # named and checked exactly as without --ray, before Ray or a model starts
    inputs = distinct_inputs(expand_inputs(inputs, output=Path(args.output)))
    outputs = output_paths(inputs, Path(args.output))
    refuse_unsafe_outputs(inputs, outputs, Path(args.stats) if args.stats else None, overwrite=args.overwrite)
    from core.outputs import check_output_target

    for out in outputs:
        check_output_target(out)
    if args.model and address == "local":  # a cluster's nodes may hold a folder this machine lacks
        from core.targets.loader import check_model_folder

        check_model_folder(args.model)
    warn_damaged(inputs, args.password)
    from core.scale.ray_pipeline import RayOptions, convert_with_ray

    options = RayOptions(address=address, actors=args.ray_actors, batch_size=args.ray_batch_size,
                         retries=args.ray_retries, cpus_per_actor=args.ray_cpus_per_actor,
                         gpus_per_actor=args.ray_gpus_per_actor)
    if options.batch_size < 1 or options.retries < 0 or (options.actors is not None and options.actors < 1):
        raise HSDError("--ray-batch-size and --ray-actors must be at least 1, --ray-retries at least 0")
    if not 0 < options.gpus_per_actor <= 1:
        raise HSDError("--ray-gpus-per-actor must be in (0, 1]")
    report = convert_with_ray(inputs, Path(args.output), engine_config(args), pages=args.pages,
                              password=args.password, fresh=args.fresh, options=options,
                              quiet=args.quiet)
    if report.failures and len(report.failures) + len(report.documents) == 1:
        raise HSDError(report.failures[0].message)  # one input: its error is the command's error
    for failure in report.failures:
        print(one_line(f"hsd: error: {failure.input_path}: {failure.message}"), file=sys.stderr)
    for stats in report.documents:
        failed = stats["totals"]["failed_pages"]
        if failed:
            print(f"hsd: warning: {one_line(stats['file'])}: pages {', '.join(map(str, failed))} failed "
                  f"(see --stats); the others were written", file=sys.stderr)
    if args.stats:
        from core.export import atomic_write_text

        from core.outputs import statistics_payload

        atomic_write_text(Path(args.stats), json.dumps(statistics_payload(report.documents), indent=1,
                                                       ensure_ascii=False))
    return 1 if report.failed else 0
