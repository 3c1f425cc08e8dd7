"""``hsd tiny-model DIR --arch ARCH [--seed N] [--metadata FOLDER]``: write a tiny random model for a download-free demo.

The folder loads like a hub checkpoint (``hsd convert --model DIR``); its output is gibberish, but
every code path (prefill, speculative verification, decoding) runs for real, on the real checkpoint's
token layout (special tokens at their real ids, stop ids, processor limits). ``--metadata`` names a
folder of the real checkpoint's small files whose ``chat_template.jinja`` and
``processor_config.json`` are then used as they are.
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
    parser.add_argument("--metadata", metavar="FOLDER",
                        help="the real checkpoint's chat_template.jinja / processor_config.json to use")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.targets.tiny import build_tiny_model

    if args.metadata and not Path(args.metadata).is_dir():
        print(f"hsd tiny-model: metadata folder not found: {args.metadata}")
        return 2
    path = build_tiny_model(args.dir, args.arch, seed=args.seed, metadata=args.metadata)
    print(f"wrote a tiny {args.arch} model to {path}")
    return 0
