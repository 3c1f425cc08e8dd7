"""``hsd tiny-model DIR --arch ARCH [--seed N] [--metadata FOLDER]``: write a tiny random model for a download-free demo.

The folder loads like a hub checkpoint (``hsd convert --model DIR``); its output is gibberish, but
every code path (prefill, speculative verification, decoding) runs for real, on the real checkpoint's
token layout (special tokens at their real ids, stop ids, processor limits). ``--metadata`` names a
folder of the real checkpoint's small files whose ``chat_template.jinja`` and
``processor_config.json`` are then used as they are.

DIR must be new, empty, or a tiny model this command wrote (its files unchanged since): a real
model folder typed by mistake is refused, not replaced. The model is built in a hidden folder
inside DIR and its files moved into place one by one, each recorded in DIR's ``RECORD`` first,
so a run stopped at any point is the same command's to finish.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

#: What this command wrote into a folder: file path (relative, "/"-separated) -> SHA-256s.
RECORD = ".hsd-tiny-model.json"
_BUILDING = ".hsd-building-"

#: The line ``hsd --help`` shows for this command.
SUMMARY = "write a tiny random model of a supported architecture (no download)"


def register(subparsers) -> None:
    from core.targets.families import FAMILY_MODULES

    parser = subparsers.add_parser(
        "tiny-model", help=SUMMARY,
        description=__doc__.splitlines()[0].split(": ", 1)[1],
    )
    parser.add_argument("dir", help="folder to write the model into (created if missing; must be empty or "
                                    "hold a tiny model written by this command)")
    parser.add_argument("--arch", required=True, choices=tuple(FAMILY_MODULES), help="model family (config.model_type)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--metadata", metavar="FOLDER",
                        help="the real checkpoint's chat_template.jinja / processor_config.json to use")
    parser.add_argument("--overwrite", action="store_true",
                        help="write into DIR even when it holds files this command did not write (those of the "
                             "same names are replaced)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.errors import HSDError

    if args.metadata and not Path(args.metadata).is_dir():
        raise HSDError(f"metadata folder not found: {args.metadata}")
    folder = Path(args.dir)
    if os.path.lexists(folder) and not folder.is_dir():
        raise HSDError(f"{folder}: exists and is not a folder; name a new or empty folder")
    from core.outputs import check_output_folder

    check_output_folder(folder, "the model folder")
    if not args.overwrite:
        foreign = files_not_written_here(folder)
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise HSDError(f"{folder} holds files this command did not write ({foreign[0]}{more}); choose a new "
                           "or empty folder, or pass --overwrite to write into it anyway")
    write_tiny_model(folder, args.arch, args.seed, args.metadata)
    from core.errors import one_line

    print(f"wrote a tiny {args.arch} model to {one_line(folder)}")
    return 0


def _files(folder: Path) -> dict[str, Path]:
    """Every file below ``folder`` by relative path, except our record and building folders."""
    found = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(_BUILDING)]
        for name in names:
            path = Path(root) / name
            relative = path.relative_to(folder).as_posix()
            if relative != RECORD:
                found[relative] = path
    return found


def _record(folder: Path) -> dict[str, list[str]]:
    from core.page_store import read_json

    data = read_json(folder / RECORD)
    return data if isinstance(data, dict) else {}


def files_not_written_here(folder: Path) -> list[str]:
    """Files in ``folder`` (relative paths) that this command did not write, or that changed since."""
    from core.page_store import file_sha256

    if not folder.is_dir():
        return []
    record = _record(folder)
    return sorted(name for name, path in _files(folder).items()
                  if file_sha256(path) not in (record.get(name) or ()))


def write_tiny_model(folder: Path, arch: str, seed: int, metadata) -> None:
    """Build the model in a hidden folder inside ``folder``, record its files, then move them in."""
    from core.export import atomic_write_text
    from core.page_store import file_sha256
    from core.targets.tiny import build_tiny_model

    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(_BUILDING + "*"):  # left by a run that was stopped
        shutil.rmtree(stale, ignore_errors=True)
    building = Path(tempfile.mkdtemp(prefix=_BUILDING, dir=folder))
    try:
        build_tiny_model(building, arch, seed=seed, metadata=metadata)
        _same_mode(_files(building).values())
        new = {name: file_sha256(path) for name, path in _files(building).items()}
        record = _record(folder)
        merged = {name: sorted(set(record.get(name) or ()) | {sha}) for name, sha in new.items()}
        atomic_write_text(folder / RECORD, json.dumps({**record, **merged}, indent=1, sort_keys=True))
        for name in new:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(building / name, folder / name)
        atomic_write_text(folder / RECORD, json.dumps({name: [sha] for name, sha in new.items()}, indent=1,
                                                      sort_keys=True))
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _same_mode(paths) -> None:
    """Every file of the model readable as the user's umask allows: the weights' writer makes its
    file private (0600) through a temporary file, while the other files get the usual 0644."""
    mask = os.umask(0)
    os.umask(mask)
    for path in paths:
        os.chmod(path, 0o666 & ~mask)
