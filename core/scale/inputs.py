"""The inputs of ``hsd convert --ray``: folders become the PDFs and images they hold.

Each document is then run as on one machine (``core.run.DocumentRun``, in the driver), so a
document started by ``hsd convert`` resumes under ``hsd convert --ray`` and the other way round,
and the Markdown and figures are byte-identical. Only the driver writes output: the actors return
results, so the output folder need not be shared with the cluster.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import UnsupportedFileError

#: File names a folder given as input contributes (the type is still decided by content).
INPUT_SUFFIXES = frozenset({".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp",
                            ".gif", ".jp2", ".jpx"})


def expand_inputs(inputs, output=None) -> list[Path]:
    """Files stay as given; a folder becomes its PDFs and images (recursively, sorted by path) so
    that the same folder always gives the same order and names. Left out: hidden entries, what
    hsd wrote there (a ``NAME_images/`` folder beside its resume folder ``.NAME.md.hsd/``), and
    the ``output`` folder when it lies inside an input folder, so a re-run never converts its own
    figures."""
    out: list[Path] = []
    skip = os.path.realpath(output) if output is not None else None
    for item in inputs:
        path = Path(item)
        if not path.is_dir():
            out.append(path)
            continue
        found = []
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not _ours(Path(root), d, skip))
            for name in files:
                if not name.startswith(".") and Path(name).suffix.lower() in INPUT_SUFFIXES:
                    found.append(Path(root) / name)
        if not found:
            raise UnsupportedFileError(f"{path}: the folder holds no PDF or image files")
        out.extend(sorted(found))
    return out


def _ours(parent: Path, name: str, output: str | None) -> bool:
    """Folder ``parent/name`` is the output folder, or the figures folder of a Markdown file whose
    resume folder stands beside it."""
    from core.export import images_dir_for, work_dir_for

    if output is not None and os.path.realpath(parent / name) == output:
        return True
    if not name.endswith("_images"):
        return False
    for entry in os.listdir(parent):
        if entry.startswith(".") and entry.endswith(".md.hsd"):
            markdown = parent / entry[1:-len(".hsd")]
            if work_dir_for(markdown).name == entry and images_dir_for(markdown).name == name:
                return True
    return False
