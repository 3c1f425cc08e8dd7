"""``hsd tiny-model``: the folder it writes is the tiny model the tests build (same seed, same bytes),
it loads through ``load_target`` like a hub checkpoint, and it is recorded so that a re-run may
replace its own files and no one else's (``tests/reliability/test_never_replaced``)."""

from __future__ import annotations

import json
from pathlib import Path

ARCH = "qwen2_5_vl"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_command_writes_the_seeded_tiny_model_and_records_its_files(tmp_path, capsys, tiny_target_dir):
    from core.cli import main
    from core.commands.tiny_model import RECORD, files_not_written_here
    from core.page_store import file_sha256

    folder = tmp_path / "demo"
    assert main(["tiny-model", str(folder), "--arch", ARCH]) == 0
    assert f"wrote a tiny {ARCH} model to {folder}" in capsys.readouterr().out
    written = _files(folder)
    assert {k: v for k, v in written.items() if k != RECORD} == _files(Path(tiny_target_dir(ARCH)))
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(written)
    assert not [p for p in folder.iterdir() if p.is_dir()], "no building folder is left behind"
    record = json.loads((folder / RECORD).read_text())
    assert record == {name: [file_sha256(folder / name)] for name in written if name != RECORD}
    assert files_not_written_here(folder) == []
    (folder / "notes.txt").write_text("mine")
    assert files_not_written_here(folder) == ["notes.txt"]


def test_a_missing_metadata_folder_is_one_line(tmp_path, capsys):
    from core.cli import main

    assert main(["tiny-model", str(tmp_path / "m"), "--arch", ARCH, "--metadata", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hsd: error: metadata folder not found") and len(err.splitlines()) == 1
    assert not (tmp_path / "m").exists()
