"""Fixtures of the scale-out tests: born-digital PDFs, a tiny model, one local Ray instance."""

from __future__ import annotations

from pathlib import Path

import pytest

ARCH = "qwen2_5_vl"
MAX_NEW = 24
DPI = 72  # few image tokens: the tiny model decodes a page in well under a second

#: name -> pages; small so that the suite stays within a couple of minutes on two CPU cores.
DOCS = {"alpha": 3, "beta": 2, "gamma": 1}


def make_pdf(path: Path, name: str, pages: int) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page(width=300, height=400)
        page.insert_text((30, 50), f"{name} page {p + 1}: hierarchical speculative decoding", fontsize=11)
        page.insert_text((30, 80), f"Revenue grew by {p * 7 + 3} percent in quarter {p + 1}.", fontsize=11)
        page.insert_text((30, 110), "Drafts are verified by the target model in one pass.", fontsize=11)
        if p == 1:  # a drawing and a caption (the text-layer drafter makes no figure region of it)
            page.draw_rect(pymupdf.Rect(40, 150, 260, 300), color=(0, 0, 1), fill=(0.7, 0.8, 1.0))
            page.insert_text((40, 320), f"Figure {p + 1}: a blue box.", fontsize=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="session")
def scale_inputs(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("scale-in")
    return [make_pdf(folder / f"{name}.pdf", name, n) for name, n in DOCS.items()]


@pytest.fixture(scope="session")
def scale_model(tiny_target_dir) -> str:
    return str(tiny_target_dir(ARCH))


@pytest.fixture(scope="session")
def scale_config(scale_model):
    from core.engine import EngineConfig

    return EngineConfig(model=scale_model, drafter="textlayer", device="cpu", max_new_tokens=MAX_NEW,
                        dpi=DPI)


def cli_args(model: str) -> list[str]:
    return ["--model", model, "--drafter", "textlayer", "--device", "cpu",
            "--max-new-tokens", str(MAX_NEW), "--dpi", str(DPI), "-q"]


@pytest.fixture(scope="session")
def single_output(tmp_path_factory, scale_inputs, scale_model) -> Path:
    """The reference: the single-machine ``hsd convert`` of the same inputs and settings, its
    review beside the output folder (``review_of``)."""
    from core.cli import main

    out = tmp_path_factory.mktemp("single") / "out"
    assert main(["convert", *map(str, scale_inputs), "-o", str(out), *cli_args(scale_model),
                 "--review", str(out.parent / "review.json")]) == 0
    return out


def review_of(path: Path) -> list[dict]:
    """A ``--review`` JSON report's documents, each named by its input's file name."""
    import json

    documents = json.loads(path.read_text("utf-8"))["documents"]
    return [dict(document, file=Path(document["file"]).name) for document in documents]


def output_files(folder: Path) -> dict[str, bytes]:
    """Everything a user reads (Markdown and figures), not the resume folders."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part.endswith(".hsd") for part in p.relative_to(folder).parts)}


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance for the whole session (starting one costs seconds)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'hsd-studio[ray]')")
    pytest.importorskip("ray")
    from core.scale.ray_pipeline import WORKER_ENV

    # Ray starts its workers at nice 15: beside other programs at the normal priority (a busy test
    # machine) the model actors and drafting tasks the tests wait for got almost no CPU, and a test
    # that takes a minute took many. The tests' workers run at the tests' own priority.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_worker_niceness", "0")  # read by the raylet that ``ray.init`` starts
        ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": dict(WORKER_ENV)},
                 logging_level="WARNING", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def workers_unpickle_this_module(request):
    """What a test module defines (engine factories, held drafting tasks) travels to the Ray workers
    by value: the tests are not installed there. Used by a module's ``pytestmark``."""
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    cloudpickle.register_pickle_by_value(request.module)
    yield
    cloudpickle.unregister_pickle_by_value(request.module)
