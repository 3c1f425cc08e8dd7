"""The Ray options of ``hsd convert``: ``core.commands.convert`` runs the documents of ``--ray`` with
the same loop, progress line and epilogue as on one machine, from the ``RayDocuments`` made here."""

from __future__ import annotations

import re
from pathlib import Path

from core import tuning


def add_arguments(parser) -> None:
    """Options that only matter with ``--ray`` (``--ray`` itself is declared by ``convert``)."""
    g = parser.add_argument_group("Ray (with --ray; see docs/scale-out.md)")
    g.add_argument("--ray-actors", type=int, default=None, metavar="N",
                   help="model actors, one model each (default: one per GPU in the cluster, else 1)")
    g.add_argument("--ray-gpus-per-actor", type=float, default=tuning.RAY_GPUS_PER_ACTOR, metavar="F",
                   help=f"GPU share per model actor; 0.5 puts two models on each GPU "
                        f"(default {tuning.RAY_GPUS_PER_ACTOR:g})")
    g.add_argument("--ray-batch-size", type=int, default=tuning.RAY_PAGES_AHEAD, metavar="N",
                   help=f"pages of a document rendered ahead of the one its model actor decodes "
                        f"(default {tuning.RAY_PAGES_AHEAD})")
    g.add_argument("--ray-drafting-tasks", type=int, default=None, metavar="N",
                   help="pages of a document drafted at once, each on a Ray CPU task (default: the CPUs "
                        "beside the model actors, shared by the documents running at once)")
    g.add_argument("--ray-retries", type=int, default=tuning.RAY_RETRIES, metavar="N",
                   help="further attempts of a page that fails before it is recorded as failed "
                        f"(default {tuning.RAY_RETRIES})")
    g.add_argument("--ray-cpus-per-actor", type=float, default=tuning.RAY_CPUS_PER_ACTOR, metavar="N",
                   help=f"CPUs reserved per model actor (default {tuning.RAY_CPUS_PER_ACTOR:g})")


_ADDRESS = re.compile(r"^(local|auto|(ray|ray\+\w+|https?)://\S+|[\w.\-]+:\d+)$")


def split_address(value: str, inputs: list[str]) -> tuple[str, list[str]]:
    """``--ray`` takes an optional ADDRESS, so ``--ray in.pdf ...`` hands argparse's first input to
    ``--ray``: a value that is not an address but an existing path is given back to the inputs."""
    if value != "local" and not _ADDRESS.match(value) and Path(value).exists():
        return "local", [value, *inputs]
    return value, inputs


def ray_inputs(args) -> tuple[str, list[Path]]:
    """``hsd convert --ray [ADDRESS] INPUT...``: the address, and the inputs with each folder given
    as its PDFs and images (the output folder and what hsd wrote left out)."""
    from core.errors import HSDError
    from core.scale.inputs import expand_inputs

    address, inputs = split_address(args.ray, list(args.inputs))
    if not inputs:
        raise HSDError(f"convert needs at least one INPUT (is {args.ray!r} meant as one? it does not exist)"
                       if address != "local" else "convert needs at least one INPUT")
    return address, expand_inputs(inputs, output=Path(args.output))


def ray_documents(args, address: str, config):
    """The ``RayDocuments`` that run ``hsd convert --ray``'s documents, its options checked."""
    from core.errors import HSDError
    from core.scale.ray_pipeline import RayDocuments, RayOptions, require_ray

    options = RayOptions(address=address, actors=args.ray_actors, batch_size=args.ray_batch_size,
                         retries=args.ray_retries, cpus_per_actor=args.ray_cpus_per_actor,
                         gpus_per_actor=args.ray_gpus_per_actor, drafting_window=args.ray_drafting_tasks)
    if (options.batch_size < 1 or options.retries < 0 or (options.actors is not None and options.actors < 1)
            or (options.drafting_window is not None and options.drafting_window < 1)):
        raise HSDError("--ray-batch-size, --ray-actors and --ray-drafting-tasks must be at least 1, "
                       "--ray-retries at least 0")
    if not 0 < options.gpus_per_actor <= 1:
        raise HSDError("--ray-gpus-per-actor must be in (0, 1]")
    require_ray()  # before any output folder is touched
    return RayDocuments(config, options)
