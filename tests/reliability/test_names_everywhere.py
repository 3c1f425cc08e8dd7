"""Output names hold on file systems as people have them: where case and Unicode normalisation are
ignored (macOS and Windows by default) two inputs never share a Markdown file, a figures folder or
a resume folder, on the single-machine path and on Ray; and a folder converted into itself never
takes hsd's own figures for inputs.

The naming is checked against a folder that compares names the way APFS does (a model written
here, independent of the code under test), through the real ``hsd convert``, and on a real FAT
file system where this machine can make one (a loop-mounted image, or an image written with mtools).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

from core.export import images_dir_for, work_dir_for
from core.outputs import output_paths
from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR

NFC = unicodedata.normalize("NFC", "résumé")
NFD = unicodedata.normalize("NFD", "résumé")
assert NFC != NFD

#: Input sets that a case- or normalisation-insensitive folder would merge.
CLASHES = {
    "case of the extension and the stem": ["c/Scan.PDF", "c/scan.png"],
    "case of the stem": ["c/X.pdf", "c/x.pdf"],
    "composed and decomposed accents": [f"c/{NFC}.pdf", f"c/{NFD}.pdf"],
    "case of a folder": ["c/Sub/a.pdf", "c/sub/a.pdf", "c/SUB/a.png"],
    "everything at once": ["c/Scan.PDF", "c/scan.png", "c/SCAN.pdf", f"c/{NFC}.pdf", f"c/{NFD}.PDF",
                           "c/Straße.pdf", "c/STRASSE.pdf", "c/d/x.pdf", "c/D/X.pdf"],
}


class InsensitiveFolder:
    """A folder tree that compares names as APFS does by default: case-insensitively and after
    Unicode normalisation. ``create(path)`` says which existing entry the path lands on."""

    def __init__(self):
        self.entries: dict[tuple[str, ...], str] = {}

    @staticmethod
    def key(path: Path) -> tuple[str, ...]:
        return tuple(unicodedata.normalize("NFD", part).casefold() for part in path.parts)

    def create(self, path: Path, owner: str) -> str:
        """The owner of the entry ``path`` lands on (``owner`` if it is new)."""
        return self.entries.setdefault(self.key(path), owner)


@pytest.mark.parametrize("case", sorted(CLASHES))
def test_outputs_never_meet_in_a_case_and_normalisation_insensitive_folder(case):
    inputs = [Path(p) for p in CLASHES[case]]
    outputs = output_paths(inputs, Path("out"))
    folder = InsensitiveFolder()
    for source, markdown in zip(inputs, outputs):
        for path in (markdown, images_dir_for(markdown), work_dir_for(markdown)):
            assert folder.create(path, str(source)) == str(source), (case, path, outputs)


def _with_figures(monkeypatch) -> None:
    """The text-layer drafter also reports a figure a page, as a layout drafter would for a picture."""
    from core.drafters import textlayer
    from core.drafters.base import Region

    draft = textlayer.TextLayerDrafter.draft
    monkeypatch.setattr(textlayer.TextLayerDrafter, "draft", lambda self, page: draft(self, page) + [
        Region("figure", (40.0, 240.0, 380.0, 440.0), "", "textlayer")])


def test_convert_writes_one_output_per_input_whatever_the_file_system(tmp_path, cli, model_dir, monkeypatch):
    """``hsd convert c/Scan.PDF c/scan.png -o out`` wrote one ``Scan.md`` on macOS and Windows (one
    output replacing the other, one resume folder for both); ``résumé.pdf`` in its two Unicode
    spellings likewise. Checked through the command: its outputs, figures folders and resume
    folders are distinct however the file system compares names."""
    _with_figures(monkeypatch)
    c = tmp_path / "c"
    c.mkdir()
    inputs = [h.text_pdf(c / "Scan.PDF", pages=1), h.text_image(c / "scan.png"),
              h.text_pdf(c / f"{NFC}.pdf", pages=1), h.text_pdf(c / f"{NFD}.pdf", pages=1)]
    out = tmp_path / "out"
    rc, _, err = cli("convert", *inputs, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    written = sorted(out.glob("*.md"))
    assert len(written) == len(inputs), written
    folder = InsensitiveFolder()
    for md in written:
        for path in (md, images_dir_for(md), work_dir_for(md)):
            assert folder.create(path.relative_to(tmp_path), md.name) == md.name, (path, written)
        assert (work_dir_for(md) / "page-0001.json").is_file()


# --- on a real case-insensitive file system ----------------------------------------------------------


@pytest.fixture
def insensitive_mount(tmp_path):
    """A folder on a real case-insensitive file system: a tmpfs mounted with ``casefold`` or a FAT
    image on a loop device (both need root and kernel support); skips where neither can be made."""
    where = tmp_path / "mnt"
    where.mkdir()
    attempts = [["mount", "-t", "tmpfs", "-o", "casefold,size=16m", "tmpfs", str(where)]]
    if shutil.which("mkfs.vfat"):
        image = tmp_path / "fat.img"
        made = subprocess.run(["mkfs.vfat", "-C", str(image), "32768"], capture_output=True)
        if made.returncode == 0:
            attempts.append(["mount", "-o", "loop", str(image), str(where)])
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    for command in attempts:
        if subprocess.run(command, capture_output=True).returncode == 0:
            break
    else:
        pytest.skip("this kernel mounts neither a casefold tmpfs nor FAT")
    try:
        (where / "Probe").write_text("x")
        if not (where / "probe").exists():
            pytest.skip("the mounted file system is not case-insensitive")
        (where / "Probe").unlink()
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_on_a_case_insensitive_mount_each_input_keeps_its_output(tmp_path, insensitive_mount, cli, model_dir):
    c = tmp_path / "c"
    c.mkdir()
    inputs = [h.text_pdf(c / "Scan.PDF", pages=1), h.text_image(c / "scan.png")]
    out = insensitive_mount / "out"
    rc, _, err = cli("convert", *inputs, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert len(list(out.glob("*.md"))) == 2
    assert len([p for p in out.iterdir() if p.name.endswith(".md.hsd")]) == 2


def test_the_outputs_fit_side_by_side_on_a_fat_file_system(tmp_path, cli, model_dir, monkeypatch):
    """Without a mount: the outputs of a run copied into a FAT image with mtools, which compares
    names as FAT does (case-insensitively); every file and folder must arrive as its own entry."""
    if not (shutil.which("mkfs.vfat") and shutil.which("mcopy") and shutil.which("mdir")):
        pytest.skip("needs mkfs.vfat and mtools")
    _with_figures(monkeypatch)
    c = tmp_path / "c"
    c.mkdir()
    inputs = [h.text_pdf(c / "Scan.PDF", pages=1), h.text_image(c / "scan.png"), h.text_pdf(c / "X.pdf", pages=1),
              h.text_pdf(c / "x.pdf", pages=1)]
    out = tmp_path / "out"
    rc, _, err = cli("convert", *inputs, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    image = tmp_path / "fat.img"
    subprocess.run(["mkfs.vfat", "-C", str(image), "8192"], check=True, capture_output=True)
    env = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}
    entries = sorted(out.iterdir())
    for entry in entries:  # "-D s": on a clash keep the first and skip, so a merge shows as a missing entry
        subprocess.run(["mcopy", "-s", "-D", "s", "-i", str(image), str(entry), "::/"], env=env, capture_output=True)
    listing = subprocess.run(["mdir", "-b", "-i", str(image), "::/"], env=env, check=True, capture_output=True)
    names = [line.rstrip("/").rsplit("/", 1)[-1] for line in listing.stdout.decode().splitlines() if line.strip()]
    assert len(names) == len(entries), (names, [e.name for e in entries])
    assert len([n for n in names if n.endswith(".md")]) == len(inputs), names


# --- a folder converted into itself ------------------------------------------------------------------


def test_a_folder_converted_into_itself_never_takes_its_outputs_for_inputs(tmp_path, cli, model_dir, monkeypatch):
    """A re-run of ``hsd convert --ray DIR -o DIR/out`` (or ``-o DIR``) picked up the figures of the
    first run as inputs. Checked up to Ray's door: the inputs the Ray run receives."""
    from core.scale import ray_pipeline

    _with_figures(monkeypatch)
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf = h.text_pdf(folder / "x.pdf", pages=1)
    for out in (folder / "out" / "x.md", folder / "x.md"):  # what an earlier run left
        rc, _, err = cli("convert", pdf, "-o", out, "--model", model_dir, *FAST_AR)
        assert rc == 0, err
        assert list(images_dir_for(out).glob("page-*.png"))
    seen = []

    def record(self, requests):
        seen.append([request.input for request in requests])  # what the Ray run would convert
        return []

    monkeypatch.setattr(ray_pipeline, "require_ray", lambda: None)
    monkeypatch.setattr(ray_pipeline.RayDocuments, "runs", record)
    for out in (folder / "out", folder):
        rc, _, err = cli("convert", "--ray", "local", folder, "-o", out, "--model", model_dir, *FAST_AR)
        assert rc == 0, err
    assert seen == [[pdf], [pdf]], seen
