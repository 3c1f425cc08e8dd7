"""``hsd tiny-model DIR --arch ARCH [--seed N]``: write a tiny random model for a download-free demo.

The folder loads like a hub checkpoint (``hsd convert --model DIR``); its output is gibberish, but
every code path (prefill, speculative verification, decoding) runs for real.
"""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    from core.targets.tiny import TINY_ARCHS

    parser = subparsers.add_parser(
        "tiny-model", help="write a tiny random model of a supported architecture (no download)",
        description=__doc__.splitlines()[0].split(": ", 1)[1],
    )
    parser.add_argument("dir", help="folder to write the model into (created if missing)")
    parser.add_argument("--arch", required=True, choices=TINY_ARCHS, help="model family (config.model_type)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.targets.tiny import build_tiny_model

    path = build_tiny_model(args.dir, args.arch, seed=args.seed)
    print(f"wrote a tiny {args.arch} model to {path}")
    return 0
