"""Where ``hsd convert`` writes each input, and the checks that keep it from destroying a file.

Naming (the same for the single-machine and the Ray path): one input with ``-o NAME.md`` writes
NAME.md; otherwise ``-o OUT`` is a folder that mirrors the inputs' folders below their common
parent, so ``c/x.pdf c/x-2.pdf c/sub/x.pdf -o out`` gives ``out/x.md``, ``out/x-2.md`` and
``out/sub/x.md``. Inputs whose stems would give the same name (``x.pdf``, ``x.png``) keep their
whole file name (``x.pdf.md``, ``x.png.md``); where even those meet, a short hash of the input's
path is added. Names meet when a file system that ignores case and Unicode normalisation (macOS's
and Windows' defaults) would take them for one (``Scan.PDF`` and ``scan.png``, ``résumé`` in its
composed and decomposed spellings, ``c/X/a.pdf`` and ``c/x/a.pdf``), so two inputs never share an
output, a figures folder or a resume folder on any file system.

Checks, all before any work and without loading a model: no output (Markdown, figures folder,
resume folder, statistics) is or resolves to an input, the figures and resume folders are not
symbolic links, and no existing file that this tool did not write (nor anything that is not a
regular file: a FIFO, socket, device or symbolic link) is replaced unless ``overwrite`` is given.
Whatever ``overwrite`` says, no output is a device, FIFO or socket, lies under ``/proc`` or
``/sys``, or goes where a probe file cannot be written (``check_output_target``, used by every
command for every file it writes); this tool's own JSON files are known by their format marker.

Exports of finished documents (``hsd export``, ``core.exports``) are named by a pattern in a folder
(``export_targets``) and checked all at once before the first is written (``refuse_unsafe_exports``):
never a source or its folders, never two on one name, never an existing file without ``overwrite``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
import warnings
from pathlib import Path

from core.errors import HSDError, HSDWarning
from core.export import fit_name, foreign_files, images_dir_for, refuse_symlinked_folders, work_dir_for
from core.page_store import read_json


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
    level = [0] * len(inputs)  # 0: the stem; 1: the whole file name; 2: that and a hash of the path
    while True:
        names = [_output_name(p, level[i], os.path.join(relative[i], p.name)) for i, p in enumerate(inputs)]
        taken: dict[tuple[str, str], list[int]] = {}
        for i, name in enumerate(names):
            taken.setdefault((comparable_name(relative[i]), comparable_name(name)), []).append(i)
        # in each clash, the names of the lowest level give way (a whole name outranks a stem)
        clash = [i for group in taken.values() if len(group) > 1
                 for i in group if level[i] == min(level[j] for j in group) < 2]
        if not clash:  # level 2 names hash distinct paths, so this always ends
            break
        for i in clash:
            level[i] += 1
    return [output / name if rel == "." else output / rel / name for rel, name in zip(relative, names)]


def comparable_name(name: str) -> str:
    """``name`` as a file system that ignores case and Unicode normalisation compares it (APFS and
    HFS+ by default, NTFS and FAT for case): two names with the same result are one file there."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())


def _output_name(path: Path, level: int, relative: str) -> str:
    base = path.name if level else (path.stem or path.name)
    if level >= 2:
        base += "-" + hashlib.sha1(os.fsencode(relative)).hexdigest()[:8]
    return fit_name(base or "document", ".md")


#: Kernel interfaces, never a place for results (a write there changes the system or fails late).
_SYSTEM_TREES = ("/proc", "/sys")


def check_output_target(path: Path, what: str = "the output") -> None:
    """``HSDError`` (one line) when ``path`` cannot be a file this tool writes, whatever ``overwrite``
    says: something that is not a regular file stands there (a device such as ``/dev/null``, a FIFO,
    a socket, a folder; also through a symbolic link), it lies under ``/proc`` or ``/sys``, its
    folder is a file or cannot be written, or a one-byte probe file cannot be written there (a full
    or read-only disk). Every output of every command passes here before any work starts, so
    nothing fails only after a model has loaded or a whole document has been converted."""
    path = Path(path)
    refuse_special_file(path, what)
    _refuse_system_trees(path, what)
    _probe(_folder_above(path, what), path, what)


def check_output_folder(folder: Path, what: str = "the output folder") -> None:
    """``check_output_target``'s checks for a folder this tool writes files into (it may not exist
    yet): a folder or nothing stands there, outside /proc and /sys, and a file can be written in it
    (or in the folder it will be made in)."""
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise HSDError(f"{folder}: exists and is not a folder; {what} must be a folder")
    _refuse_system_trees(folder, what)
    _probe(folder if folder.is_dir() else _folder_above(folder, what), folder, what)


def _refuse_system_trees(path: Path, what: str) -> None:
    real = os.path.realpath(path)
    tree = next((t for t in _SYSTEM_TREES if real == t or real.startswith(t + os.sep)), None)
    if tree:
        raise HSDError(f"{path}: lies under {tree}, a kernel interface; {what} must go to an ordinary folder")


def _folder_above(path: Path, what: str) -> Path:
    """The nearest existing folder above ``path`` (where its missing folders will be made);
    ``HSDError`` when the nearest existing thing above it is not a folder."""
    for parent in path.absolute().parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise HSDError(f"{path}: {parent} is not a folder; {what} cannot be written below it")
            return parent
    raise HSDError(f"{path}: no folder above it exists")


def refuse_special_file(path: Path, what: str = "the output") -> None:
    """``HSDError`` when a folder, device, FIFO or socket stands at ``path`` (also through a
    symbolic link): never replaced, whatever ``overwrite`` says."""
    if not os.path.lexists(path):
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:  # a dangling link: replacing it is the overwrite rules' business
        return
    if stat.S_ISDIR(mode):
        raise HSDError(f"{path}: is a folder; {what} names a file to write")
    if not stat.S_ISREG(mode):
        raise HSDError(f"{path}: is not a regular file (a device, FIFO or socket); {what} is never written "
                       "there, choose a file name")


def _probe(folder: Path, path: Path, what: str) -> None:
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".hsd-probe-", dir=folder)
    except OSError as exc:
        raise HSDError(f"{path}: {what} cannot be written ({exc.strerror or exc} in {folder})") from None
    try:
        try:
            os.write(fd, b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise HSDError(f"{path}: {what} cannot be written ({exc.strerror or exc} in {folder})") from None
    finally:
        try:
            os.unlink(probe)
        except OSError:
            pass


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

    for out in outputs:  # the rest of each Markdown file's checks comes with its input (``check_output_target``)
        refuse_special_file(out)
        refuse_symlinked_folders(out)
        refuse_inputs(out, "the output")
        refuse_inputs(images_dir_for(out), "the figures folder of this output")
        refuse_inputs(work_dir_for(out), "the resume folder of this output")
    if stats is not None:
        refuse_inputs(stats, "--stats")
        if os.path.realpath(stats) in {os.path.realpath(o) for o in outputs}:
            raise HSDError(f"{stats}: --stats would replace a Markdown output; choose another file")
        if stats.is_dir():
            raise HSDError(f"{stats}: is a folder; --stats names the JSON file to write")
        check_output_target(stats, "--stats")
    if overwrite:
        return
    found = [f for out in outputs for f in foreign_files(out)]
    if stats is not None and os.path.lexists(stats) and not _our_statistics(stats):
        found.append(stats)
    _refuse_foreign(found)


def _refuse_foreign(found: list[Path], why: str = " and was not written by hsd") -> None:
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise HSDError(f"{found[0]} exists{why}{more}; pass --overwrite to replace "
                       f"{'them' if more else 'it'}")


#: The ``"format"`` key of every JSON file ``--stats`` and ``hsd draft --json`` write: a file is
#: taken for this tool's own (and replaced without ``--overwrite``) only when it carries its marker
#: and nothing but the keys this tool writes, never because nothing in it says otherwise.
STATS_FORMAT = "hsd-stats/1"
DRAFTS_FORMAT = "hsd-drafts/1"
_DOCUMENT_KEYS = {"file", "output", "settings", "totals", "pages"}


def statistics_payload(documents: list[dict]) -> dict:
    """What ``--stats`` writes: one document's statistics, or ``{"documents": [...]}`` for several,
    with this tool's format marker."""
    if len(documents) == 1:
        return {"format": STATS_FORMAT, **documents[0]}
    return {"format": STATS_FORMAT, "documents": documents}


def drafts_payload(input_path: str, pages: list[dict]) -> dict:
    """What ``hsd draft --json`` writes, with this tool's format marker."""
    return {"format": DRAFTS_FORMAT, "file": input_path, "pages": pages}


def _our_statistics(path: Path) -> bool:
    """A statistics file as ``--stats`` writes it: the marker, and one document's keys or
    ``documents`` holding only documents."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != STATS_FORMAT:
        return False
    keys = set(data) - {"format"}
    if keys == {"documents"}:
        docs = data["documents"]
        return isinstance(docs, list) and all(isinstance(d, dict) and set(d) <= _DOCUMENT_KEYS for d in docs)
    return keys <= _DOCUMENT_KEYS


def _our_drafts(path: Path) -> bool:
    """A file as ``hsd draft --json`` writes it: the marker, ``file`` and ``pages`` of page records."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != DRAFTS_FORMAT or set(data) != {"format", "file", "pages"}:
        return False
    pages = data["pages"]
    return isinstance(pages, list) and all(isinstance(p, dict) and {"page", "regions"} <= set(p) for p in pages)


def refuse_unsafe_json_output(path: Path, input_path: Path, overwrite: bool = False) -> None:
    """``HSDError`` (one line) when ``hsd draft --json PATH`` would replace its input, a folder, or
    an existing file it did not write (anything but a JSON file of drafted regions, and anything
    that is not a regular file) and ``overwrite`` is not set."""
    path = Path(path)
    if os.path.realpath(path) == os.path.realpath(input_path):
        raise HSDError(f"{path}: --json would replace the input; choose another file")
    if path.is_dir() and not path.is_symlink():
        raise HSDError(f"{path}: is a folder; --json names the file to write")
    check_output_target(path, "--json")
    if not overwrite and os.path.lexists(path) and not _our_drafts(path):
        _refuse_foreign([path])


# --- exports of finished documents (``hsd export``, the app's batch export) -----------------------

#: The file name of each export: the converted file's stem and the format's extension.
EXPORT_PATTERN = "{stem}.{ext}"
_PATTERN_FIELDS = ("stem", "n", "ext", "format", "parent")


def export_targets(sources, formats, folder: Path | None = None, pattern: str = EXPORT_PATTERN) -> list[dict]:
    """Per source (a converted ``NAME.md``), format -> the file its export writes: ``pattern`` filled
    in (``{stem}``: the source's stem, ``{n}``: its number in the batch from 1, ``{ext}``/``{format}``:
    md, html, docx or json, ``{parent}``: the source's folder's name) in ``folder`` (beside the source
    where None). ``HSDError`` for a pattern that names an unknown field, a folder or nothing, and for
    two exports that would write one file (on any file system: names are compared as
    ``comparable_name`` does)."""
    sources = [Path(s) for s in sources]
    width = len(str(len(sources)))
    targets: list[dict] = []
    seen: dict[str, tuple[Path, str]] = {}
    for n, source in enumerate(sources, 1):
        per_format = {}
        for fmt in formats:
            values = {"stem": source.stem or "document", "n": str(n).zfill(width), "ext": fmt, "format": fmt,
                      "parent": source.absolute().parent.name or "root"}
            try:
                name = pattern.format_map(values)
            except (KeyError, IndexError, ValueError, AttributeError) as exc:
                raise HSDError(f"--name {pattern!r}: {exc.args[0] if exc.args else exc} is not a field; use "
                               + ", ".join("{" + f + "}" for f in _PATTERN_FIELDS)) from None
            if not name.strip(". ") or "/" in name or "\\" in name or "\0" in name:
                raise HSDError(f"--name {pattern!r} gives {name!r}, not a file name; name files, not folders")
            if not name.lower().endswith("." + fmt):
                name += "." + fmt
            target = Path(folder if folder is not None else source.parent) / fit_name(name[:-len(fmt) - 1],
                                                                                      "." + fmt)
            key = comparable_name(os.path.abspath(target))
            if key in seen:
                other, other_fmt = seen[key]
                raise HSDError(f"{target}: the {fmt} of {source} and the {other_fmt} of {other} would both be "
                               "written there; add {n} or {parent} to --name")
            seen[key] = (source, fmt)
            per_format[fmt] = target
        targets.append(per_format)
    return targets


def refuse_unsafe_exports(sources, targets: list[dict], overwrite: bool = False) -> None:
    """``HSDError`` (one line) before any export is written when one would replace a source, its
    figures or resume folder, something that is not a regular file, or (``overwrite`` not set) any
    existing file, the figures a Markdown export copies included."""
    protected = {}
    for source in sources:
        source = Path(source)
        for place in (source, images_dir_for(source), work_dir_for(source)):
            protected[os.path.realpath(place)] = source
    found = []
    for per_format in targets:
        for fmt, target in per_format.items():
            places = [target] + ([images_dir_for(target)] if fmt == "md" else [])
            for place in places:
                real = os.path.realpath(place)
                hit = protected.get(real) or next((s for p, s in protected.items() if p.startswith(real + os.sep)),
                                                  None)
                if hit is not None:
                    raise HSDError(f"{place}: the export would replace {hit} or its files; choose another folder "
                                   "or --name")
            check_output_target(target, "the export")
            if os.path.lexists(target):
                found.append(target)
            if fmt == "md":
                images = images_dir_for(target)
                if os.path.lexists(images) and not images.is_dir():
                    found.append(images)
                elif images.is_dir():
                    found.extend(p for p in sorted(images.iterdir()) if p.name.startswith("page-"))
    if found and not overwrite:
        _refuse_foreign(found, "")
