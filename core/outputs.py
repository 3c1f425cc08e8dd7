"""Where ``hsd convert`` writes each input, and the checks that keep it from destroying a file.

Naming (the same for the single-machine and the Ray path): one input with ``-o NAME.md`` writes
NAME.md; otherwise ``-o OUT`` is a folder that mirrors the inputs' folders below their common
parent, so ``c/x.pdf c/x-2.pdf c/sub/x.pdf -o out`` gives ``out/x.md``, ``out/x-2.md`` and
``out/sub/x.md``. Inputs of one folder whose stems would give the same name (``x.pdf``, ``x.png``)
keep their whole file name (``x.pdf.md``, ``x.png.md``), so two inputs never share an output.

Checks, all before any work and without loading a model: no output (Markdown, figures folder,
resume folder, statistics) is or resolves to an input, and no existing file that this tool did not
write is replaced unless ``overwrite`` is given.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from core.errors import HSDError, HSDWarning
from core.export import fit_name, foreign_files, images_dir_for, work_dir_for


def distinct_inputs(inputs) -> list[Path]:
    """``inputs`` without repeats of one file (the same path twice, or a link to one given too),
    with a warning for each dropped one."""
    seen: set[str] = set()
    kept = []
    for item in inputs:
        path = Path(item)
        real = os.path.realpath(path)
        if real in seen:
            warnings.warn(HSDWarning(f"{path}: given more than once; converted once"), stacklevel=2)
            continue
        seen.add(real)
        kept.append(path)
    return kept


def output_paths(inputs, output) -> list[Path]:
    """The Markdown file of each input (see the module's docstring); ``HSDError`` for an ``-o``
    that cannot be used (an existing folder named as the file, an existing file named as the folder)."""
    inputs = [Path(p) for p in inputs]
    output = Path(output)
    if len(inputs) == 1 and output.suffix.lower() == ".md":
        if output.is_dir():
            raise HSDError(f"{output}: is a folder; -o names the Markdown file to write (or pass a folder "
                           "name without .md to write NAME.md inside it)")
        return [output]
    if os.path.lexists(output) and not output.is_dir():
        if len(inputs) == 1:
            raise HSDError(f"{output}: is an existing file that does not end in .md; -o takes a .md file name "
                           "or a folder")
        raise HSDError(f"{output}: is a file; with {len(inputs)} inputs -o must be a folder")
    if not inputs:
        return []
    folders = [os.path.dirname(os.path.abspath(p)) for p in inputs]
    base = os.path.commonpath(folders)
    relative = [os.path.relpath(f, base) for f in folders]
    whole_name: set[int] = set()  # inputs named by their whole file name, not their stem
    while True:
        names = [_output_name(p, i in whole_name) for i, p in enumerate(inputs)]
        taken: dict[tuple[str, str], list[int]] = {}
        for i, name in enumerate(names):
            taken.setdefault((relative[i], name), []).append(i)
        clash = {i for group in taken.values() if len(group) > 1 for i in group} - whole_name
        if not clash:  # whole names of one folder's files are distinct, so this always ends
            break
        whole_name |= clash
    return [output / name if rel == "." else output / rel / name for rel, name in zip(relative, names)]


def _output_name(path: Path, whole: bool) -> str:
    base = path.name if whole else (path.stem or path.name)
    return fit_name(base or "document", ".md")


def refuse_unsafe_outputs(inputs, outputs, stats: Path | None = None, overwrite: bool = False) -> None:
    """``HSDError`` (one line naming the file) when an output is, resolves to or holds an input, or
    would replace a file this tool did not write and ``overwrite`` is not set."""
    real_inputs = {os.path.realpath(p): Path(p) for p in inputs}

    def refuse_inputs(target: Path, what: str) -> None:
        real = os.path.realpath(target)
        victim = real_inputs.get(real)
        if victim is None:
            victim = next((p for r, p in real_inputs.items() if r.startswith(real.rstrip(os.sep) + os.sep)), None)
        if victim is not None:
            same = "" if str(victim) == str(target) else f" {victim}"
            raise HSDError(f"{target}: {what} would replace the input{same}; choose another -o")

    for out in outputs:
        refuse_inputs(out, "the output")
        refuse_inputs(images_dir_for(out), "the figures folder of this output")
        refuse_inputs(work_dir_for(out), "the resume folder of this output")
    if stats is not None:
        refuse_inputs(stats, "--stats")
        if os.path.realpath(stats) in {os.path.realpath(o) for o in outputs}:
            raise HSDError(f"{stats}: --stats would replace a Markdown output; choose another file")
        if stats.is_dir():
            raise HSDError(f"{stats}: is a folder; --stats names the JSON file to write")
    if overwrite:
        return
    found = [f for out in outputs for f in foreign_files(out)]
    if stats is not None and os.path.lexists(stats) and not _our_statistics(stats):
        found.append(stats)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise HSDError(f"{found[0]} exists and was not written by hsd{more}; pass --overwrite to replace "
                       f"{'them' if more else 'it'}")


def _our_statistics(path: Path) -> bool:
    """A statistics file as ``--stats`` writes it (one document's, or ``{"documents": [...]}``)."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    docs = data.get("documents") if isinstance(data, dict) else None
    docs = docs if isinstance(docs, list) else [data]
    return all(isinstance(d, dict) and {"file", "output", "settings", "totals", "pages"} <= set(d) for d in docs)
