"""Driver side of a distributed conversion: documents, resume, assembly, statistics.

The same code decides what is done and writes the output as the single-machine path
(``core.run``): ``core.run.plan_document`` for what an earlier run kept, ``core.export.DocumentOutput``
for per-page resume and atomic writes, ``settings_of`` for the resume key, ``output_paths`` for
names and ``refuse_unsafe_outputs`` for the checks, ``document_stats`` for statistics.
So a document started by ``hsd convert`` resumes under ``hsd convert --ray`` and the other way round,
and the Markdown and figures are byte-identical.

Only the driver writes output: workers return results, so the output folder need not be shared
with the cluster (the inputs must be readable at the same path on every node).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import HSDError, UnsupportedFileError
from core.results import PageResult
from core.run import DocumentPlan

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


@dataclass
class DocumentFailure:
    """A document that could not be opened or planned (the single path prints it and goes on)."""

    input_path: Path
    message: str


@dataclass
class DocumentJob:
    """One document of a run: its plan (``core.run.DocumentPlan``: the pages kept from an earlier
    run, those to do) and what came back."""

    id: int
    input_path: Path
    output_path: Path
    plan: DocumentPlan
    output: object                          # core.export.DocumentOutput
    results: dict[int, PageResult] = field(default_factory=dict)  # page number -> this run's result

    @property
    def todo(self) -> list[int]:
        """0-based pages not finished by an earlier run."""
        return self.plan.to_convert

    @property
    def done(self) -> bool:
        return len(self.results) >= len(self.todo)

    def add(self, result: PageResult) -> bool:
        """Save a page that came back (figures cropped from ``result.page_image``); False when it is
        a duplicate (a retried task can deliver a page twice) or not part of this job."""
        if result.page in self.results or result.page - 1 not in self.todo:
            return False
        self.output.save_page(result, result.page_image)
        result.page_image = None
        self.results[result.page] = result
        return True

    def finish(self, settings: dict) -> dict:
        """Write the Markdown (pages in order: this run's and the earlier runs') and return the
        document's statistics, as a run on one machine does."""
        from core.stats import document_stats

        results = [self.results.get(i + 1) or self.plan.kept[i] for i in self.plan.pages]
        self.output.write_markdown(results)
        return document_stats(str(self.input_path), str(self.output_path), settings, results)


def plan_documents(inputs: list[Path], outputs: list[Path], settings: dict, pages: str | None,
                   password: str | None, fresh: bool, overwrite: bool = True) -> list[DocumentJob | DocumentFailure]:
    """Open each input and plan it as a run on one machine does (``core.run.plan_document``: the
    same resume rules); bad inputs become ``DocumentFailure``. ``overwrite=False``: a figure file
    this tool did not write is refused (``hsd convert --ray`` checks every output before it calls
    this)."""
    import warnings

    from core.documents import open_document
    from core.errors import HSDWarning
    from core.export import DocumentOutput
    from core.run import plan_document, rejected_notice

    jobs: list[DocumentJob | DocumentFailure] = []
    for n, (in_path, out_path) in enumerate(zip(inputs, outputs)):
        try:
            with open_document(in_path, password=password) as doc:
                output = DocumentOutput(in_path, out_path, settings, resume=not fresh, overwrite=overwrite)
                plan = plan_document(doc, output, pages)
        except (HSDError, OSError) as exc:
            jobs.append(DocumentFailure(in_path, _message(exc)))
            continue
        if plan.rejected:
            warnings.warn(HSDWarning(rejected_notice(output.markdown_path, plan.rejected)), stacklevel=2)
        jobs.append(DocumentJob(id=n, input_path=in_path, output_path=out_path, plan=plan, output=output))
    return jobs


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc.strerror or exc)
    return str(exc)
