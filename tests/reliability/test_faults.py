"""Faults during a conversion: a failing page, a crashing drafter, an interrupt, a read-only or full
output folder, out-of-memory on the accelerator, a missing or damaged model, no network.

(``kill -9`` then resume lives in ``tests/core/test_convert.py``; cancelling between forward passes
in ``tests/core/test_engine.py`` and the app's cancel in ``tests/app/test_conversion.py``.)
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

import pymupdf
import pytest
import torch

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST, FAST_AR, assert_clear_error, load_target_once


def _work_files(out: Path) -> list[str]:
    return sorted(p.name for p in out.with_name(f".{out.name}.hsd").glob("page-*.json"))


def _no_partials(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if p.name.endswith(".partial")]


@pytest.fixture(scope="module")
def three_pages(tmp_path_factory):
    return h.text_pdf(tmp_path_factory.mktemp("in") / "doc.pdf", pages=3)


@pytest.fixture(scope="module")
def reference(three_pages, model_dir, tmp_path_factory):
    """What an undisturbed ``hsd convert --mode ar`` writes for ``three_pages`` (at tau 1 the hsd
    mode writes the same bytes)."""
    from core.cli import main
    from core.targets import loader

    out = tmp_path_factory.mktemp("ref") / "doc.md"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loader, "load_target", load_target_once)
        assert main(["convert", str(three_pages), "-o", str(out), "--model", model_dir, *FAST_AR]) == 0
    return out.read_bytes()


# --- one bad page never sinks the rest ---------------------------------------------------------------


def test_a_failing_page_is_reported_and_redone_on_resume(three_pages, reference, tmp_path, cli, model_dir,
                                                          monkeypatch):
    from core.engine import Engine

    original = Engine.decode_image
    calls = []

    def convert_image(self, page, **kw):
        calls.append(page.number)
        if page.number == 2 and failing:
            raise RuntimeError("simulated crash in the model on page 2")
        return original(self, page, **kw)

    monkeypatch.setattr(Engine, "decode_image", convert_image)
    failing = True
    out, stats = tmp_path / "doc.md", tmp_path / "s.json"
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, "--stats", stats, *FAST_AR)
    assert rc == 1
    assert err.strip().count("\n") == 0 and "pages 2 failed" in err and "Traceback" not in err
    pages = json.loads(stats.read_text("utf-8"))["pages"]
    assert [bool(p.get("error")) for p in pages] == [False, True, False]
    assert "simulated crash" in pages[1]["error"]
    assert out.is_file() and _work_files(out) == ["page-0001.json", "page-0002.json", "page-0003.json"]

    failing, calls[:] = False, []
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert calls == [2]  # only the failed page is converted again
    assert out.read_bytes() == reference


def test_a_drafter_crash_costs_speed_not_the_page(three_pages, reference, tmp_path, cli, model_dir, monkeypatch):
    """The drafter raising on page 2 (hsd mode): the page is decoded without drafts, and at tau 1
    the output is the same as with them."""
    from core.drafters.textlayer import TextLayerDrafter

    original = TextLayerDrafter.draft

    def draft(self, page):
        if page.number == 2:
            raise ValueError("simulated drafter bug")
        return original(self, page)

    monkeypatch.setattr(TextLayerDrafter, "draft", draft)
    out, stats = tmp_path / "doc.md", tmp_path / "s.json"
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, "--stats", stats, *FAST)
    assert rc == 0, err
    pages = json.loads(stats.read_text("utf-8"))["pages"]
    assert "simulated drafter bug" in pages[1]["stats"]["draft_error"]
    assert not pages[0]["stats"].get("draft_error") and not pages[1].get("error")
    assert out.read_bytes() == reference


def test_draft_command_with_a_crashing_drafter_is_one_line(three_pages, cli, monkeypatch):
    from core.drafters.textlayer import TextLayerDrafter

    monkeypatch.setattr(TextLayerDrafter, "draft", lambda self, page: 1 / 0)
    rc, _, err = cli("draft", three_pages, "--drafter", "textlayer")
    assert rc != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# --- interrupt mid-page --------------------------------------------------------------------------------


def test_interrupt_mid_page_keeps_finished_pages_and_resumes(three_pages, reference, tmp_path, cli, model_dir,
                                                             monkeypatch):
    """Ctrl-C during page 2's decoding: exit 130, page 1 kept, no Markdown and no half files; the
    same command again converts pages 2 and 3 only and writes what an uninterrupted run writes."""
    from core.engine import Engine
    from core.targets.base import Target

    state = {"page": 0, "passes": 0, "armed": True}
    original_page, original_forward = Engine.decode_image, Target.forward

    def convert_image(self, page, **k):
        state["page"] = page.number
        return original_page(self, page, **k)

    def forward(self, *a, **k):
        if state["armed"] and state["page"] == 2:
            state["passes"] += 1
            if state["passes"] == 2:
                raise KeyboardInterrupt
        return original_forward(self, *a, **k)

    monkeypatch.setattr(Engine, "decode_image", convert_image)
    monkeypatch.setattr(Target, "forward", forward)
    out = tmp_path / "doc.md"
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 130 and "Traceback" not in err
    assert "stopped; 1 page kept, run the same command to continue" in err, err
    assert not out.exists() and _work_files(out) == ["page-0001.json"]
    _no_partials(tmp_path)

    state["armed"] = False
    done = []
    monkeypatch.setattr(Engine, "decode_image", lambda self, page, **k:
                        done.append(page.number) or original_page(self, page, **k))
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert done == [2, 3]
    assert out.read_bytes() == reference


# --- read-only and full output folders ---------------------------------------------------------------


def test_read_only_output_folder(three_pages, tmp_path, cli, model_dir, small_fs):
    if os.geteuid() == 0:
        folder = small_fs("1m", ro=True)  # root ignores permission bits: a read-only mount
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    out = folder / "doc.md"
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err)
    assert "read-only" in err.lower() or "permission denied" in err.lower(), err
    assert list(folder.iterdir()) == []


def test_full_disk_is_one_line_and_resumes_once_there_is_room(three_pages, reference, cli, model_dir, small_fs):
    """A real ENOSPC from a 64 KiB tmpfs filled to the brim: one line, nothing half-written; after
    freeing space the same command finishes and writes the same bytes as a run that had room."""
    folder = small_fs("64k")
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    out = folder / "doc.md"
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "no space left")
    assert not out.exists()
    _no_partials(folder)
    filler.unlink()
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert out.read_bytes() == reference


def test_disk_full_while_saving_page_2_keeps_page_1_and_the_old_markdown(three_pages, reference, tmp_path, cli,
                                                                          model_dir, monkeypatch):
    """ENOSPC simulated at the rename of page 2's result (works without root): the previous
    Markdown file (someone else's, hence ``--overwrite``) is untouched, page 1 is kept, no
    temporary file is left, and the next run converts from page 2 on."""
    import core.export
    from core.engine import Engine

    out = tmp_path / "doc.md"
    out.write_text("previous version\n", "utf-8")
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("page-0002.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(core.export.os, "replace", replace)
    rc, _, err = cli("convert", three_pages, "-o", out, "--overwrite", "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "no space left", "page-0002.json")
    assert out.read_text("utf-8") == "previous version\n"
    assert _work_files(out) == ["page-0001.json"]
    _no_partials(tmp_path)

    monkeypatch.setattr(core.export.os, "replace", real_replace)
    done = []
    original = Engine.decode_image
    monkeypatch.setattr(Engine, "decode_image", lambda self, page, **k:
                        done.append(page.number) or original(self, page, **k))
    rc, _, err = cli("convert", three_pages, "-o", out, "--overwrite", "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert done == [2, 3] and out.read_bytes() == reference


def test_damaged_page_file_is_redone_not_trusted(three_pages, reference, tmp_path, cli, model_dir, monkeypatch):
    """A page result cut short or replaced by junk (a crash on a file system without atomic
    renames) is converted again; a stale temporary file from a killed run is cleaned up."""
    from core.engine import Engine

    out = tmp_path / "doc.md"
    assert cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)[0] == 0
    work = out.with_name(".doc.md.hsd")
    page2 = work / "page-0002.json"
    page2.write_bytes(page2.read_bytes()[:50])
    (work / "page-0003.json").write_text('{"result": {"page": 3}}', "utf-8")
    (work / ".page-0001.json.abc123.partial").write_bytes(b'{"half')
    done = []
    original = Engine.decode_image
    monkeypatch.setattr(Engine, "decode_image", lambda self, page, **k:
                        done.append(page.number) or original(self, page, **k))
    rc, _, err = cli("convert", three_pages, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert done == [2, 3] and out.read_bytes() == reference
    _no_partials(tmp_path)


# --- out of memory on the accelerator ------------------------------------------------------------------


def _regions_pdf(path: Path) -> Path:
    """Page 1: four paragraphs (four regions to batch); page 2: two."""
    doc = pymupdf.open()
    for paragraphs in (4, 2):
        page = doc.new_page(width=420, height=440)
        for k in range(paragraphs):
            page.insert_textbox(pymupdf.Rect(40, 40 + 100 * k, 380, 110 + 100 * k),
                                f"Paragraph {k + 1}. " + h.TEXT, fontsize=10)
    doc.save(str(path))
    return path


@pytest.fixture(scope="module")
def tiny_target(model_dir):
    return load_target_once(model_dir, device="cpu")


def _convert(target, pdf, **config):
    import tempfile

    from core.api import ConversionRequest, convert_document
    from core.engine import Engine, EngineConfig
    from core.events import PageDone
    from core.speculative.proposal_config import ProposalConfig

    # Untimed, as on a GPU: on a CPU the cost model leaves these short text-layer regions out of
    # Stage 1 (their crops would not pay), and these tests need region rows beside the page.
    config = EngineConfig(mode="hsd", drafter="textlayer", dpi=36, max_new_tokens=24,
                          proposal=ProposalConfig(cost_aware=False), **config)
    with tempfile.TemporaryDirectory() as out:
        request = ConversionRequest(pdf, Path(out) / "doc.md", config, fresh=True)
        with convert_document(request, Engine(config, target=target)) as run:
            return [e.result for e in run if isinstance(e, PageDone)]


@pytest.fixture(scope="module")
def oom_case(tiny_target, tmp_path_factory):
    pdf = _regions_pdf(tmp_path_factory.mktemp("oom") / "regions.pdf")
    results = _convert(tiny_target, pdf)
    assert len([s for s in results[0].region_stats if s.verified]) >= 3, "need several regions to batch"
    return pdf, results


def test_out_of_memory_shrinks_the_regions_beside_the_page_and_frees_the_failed_attempt(
        tiny_target, oom_case, monkeypatch):
    """Forwards of more than 3 rows (the page and 2 regions) raise OutOfMemoryError: the page starts
    over with half as many regions beside it until they fit, the output is the same, and no KV cache
    of an abandoned attempt is alive when the next attempt prefills its page."""
    from core.targets.base import Target

    pdf, reference = oom_case
    batches, caches = [], []
    forward, prefill_batch = Target.forward, Target.prefill_batch

    def oom_forward(self, tokens, *a, **k):
        batches.append(tokens.shape[0])
        if tokens.shape[0] > 3:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(self, tokens, *a, **k)

    def watched_prefill_batch(self, requests):
        if requests[0].kind == "page":
            assert all(ref() is None for ref in caches), "an earlier attempt's KV cache is still held"
        out = prefill_batch(self, requests)
        caches.append(weakref.ref(out.cache))
        return out

    monkeypatch.setattr(Target, "forward", oom_forward)
    monkeypatch.setattr(Target, "prefill_batch", watched_prefill_batch)
    results = _convert(tiny_target, pdf)
    for result, ref in zip(results, reference):
        assert result.error is None
        assert result.output_tokens == ref.output_tokens and result.markdown == ref.markdown
    assert any(s.verified for s in results[0].region_stats)
    assert max(batches) > 3 and 3 in batches


def test_out_of_memory_for_a_single_region_skips_stage_1_losslessly(tiny_target, oom_case, monkeypatch):
    """Not even one region crop fits: Stage 1 is skipped and Stage 2 verifies the raw drafts; the
    output is still the model's own."""
    from core.targets.base import Target

    pdf, reference = oom_case
    prefill_batch = Target.prefill_batch

    def oom_regions(self, requests):
        if any(r.kind == "region" for r in requests):
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return prefill_batch(self, requests)

    monkeypatch.setattr(Target, "prefill_batch", oom_regions)
    results = _convert(tiny_target, pdf)
    for result, ref in zip(results, reference):
        assert result.error is None and result.output_tokens == ref.output_tokens
        assert not any(s.verified for s in result.region_stats)


def test_out_of_memory_on_a_whole_page_fails_that_page_only(tiny_target, oom_case, monkeypatch):
    from core.targets.base import Target

    pdf, reference = oom_case
    prefill = Target.prefill
    pages_seen = []

    def oom_first_page(self, image, kind="page", *a, **k):
        if kind == "page":
            pages_seen.append(image.size)
            if len(pages_seen) == 1:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)")
        return prefill(self, image, kind, *a, **k)

    monkeypatch.setattr(Target, "prefill", oom_first_page)
    first, second = _convert(tiny_target, pdf)
    assert first.error and "out of GPU memory" in first.error and "\n" not in first.error
    assert second.error is None and second.output_tokens == reference[1].output_tokens


# --- missing model, damaged model, no network ----------------------------------------------------------


@pytest.fixture
def broken_models(tmp_path, model_dir):
    src = Path(model_dir)
    made = {}
    made["empty folder"] = tmp_path / "empty"
    made["empty folder"].mkdir()
    made["config only"] = tmp_path / "config-only"
    made["config only"].mkdir()
    shutil.copy(src / "config.json", made["config only"])
    for name in ("damaged weights", "no tokenizer", "unsupported family", "config not json"):
        made[name] = tmp_path / name.replace(" ", "-")
        shutil.copytree(src, made[name])
    for f in made["damaged weights"].glob("*.safetensors"):
        f.write_bytes(f.read_bytes()[:1000])
    for f in made["no tokenizer"].glob("tokenizer*"):
        f.unlink()
    config = json.loads((made["unsupported family"] / "config.json").read_text())
    config["model_type"] = "bert"
    (made["unsupported family"] / "config.json").write_text(json.dumps(config))
    (made["config not json"] / "config.json").write_text("{not json")
    return made


WHAT = {"empty folder": "could not load", "config only": "could not load", "damaged weights": "could not load",
        "no tokenizer": "tokenizer", "unsupported family": "supported families", "config not json": "could not load"}


def test_missing_or_damaged_model_is_one_clear_line(broken_models, tmp_path, cli):
    pdf = h.text_pdf(tmp_path / "doc.pdf", pages=1)
    for name, folder in broken_models.items():
        out = tmp_path / f"{folder.name}.md"
        rc, _, err = cli("convert", pdf, "-o", out, "--model", folder, *FAST_AR)
        assert_clear_error(rc, err, WHAT[name])
        assert not out.exists(), name


def test_hub_model_without_network_is_one_clear_line(tmp_path):
    pdf = h.text_pdf(tmp_path / "doc.pdf", pages=1)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]), "HF_HUB_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "empty-hf-home")}
    proc = subprocess.run([sys.executable, "-m", "core.cli", "convert", str(pdf), "-o", str(tmp_path / "x.md"),
                           "--model", "some-org/some-document-model", *FAST_AR], capture_output=True, text=True,
                          env=env, timeout=300)
    assert_clear_error(proc.returncode, proc.stderr, "some-org/some-document-model", "cannot be reached")
    assert not (tmp_path / "x.md").exists()
