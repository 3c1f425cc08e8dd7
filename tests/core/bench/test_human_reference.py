"""A corpus of a model's recorded outputs is labelled as such and replayed beside the human references."""

import json
import shutil

import pytest

from core.bench.human_reference import describe, human_reference_folder, reference_kind
from core.cli import main
from core.errors import HSDError


def _model_output_layout(synthetic_corpus, tmp_path):
    """``root/pairs`` (human references) and ``root/model_outputs/fakeocr/pairs`` (the model's outputs:
    the same PDFs, the model's own wording)."""
    root = tmp_path / "corpus"
    shutil.copytree(synthetic_corpus, root)
    model = root / "model_outputs" / "fakeocr"
    (model / "pairs").mkdir(parents=True)
    for name in ("alpha_report", "beta_note"):
        shutil.copy(root / "pairs" / f"{name}.pdf", model / "pairs" / f"{name}.pdf")
        human = (root / "pairs" / f"{name}.md").read_text()
        (model / "pairs" / f"{name}.md").write_text(human.replace("# ", "**").replace("percent", "%"))
    return root, model


def test_reference_kind_from_the_layout_and_the_option(synthetic_corpus, tmp_path):
    root, model = _model_output_layout(synthetic_corpus, tmp_path)
    assert reference_kind(root) == "human"
    assert reference_kind(model) == "model:fakeocr"
    assert reference_kind(root, "model:GLM-OCR") == "model:GLM-OCR"
    assert describe("model:GLM-OCR") == "target output = recorded output of GLM-OCR"
    assert human_reference_folder(model, "model:fakeocr") == (root / "pairs").resolve()
    assert human_reference_folder(model, "model:fakeocr", "none") is None
    assert human_reference_folder(root, "human") is None
    with pytest.raises(HSDError):
        reference_kind(root, "robot")


def test_bench_labels_model_outputs_and_replays_the_human_reference_beside(synthetic_corpus, tmp_path, capsys):
    _, model = _model_output_layout(synthetic_corpus, tmp_path)
    out = tmp_path / "out"
    assert main(["bench", str(model), "--drafter", "textlayer", "--tokenizer", "tiny", "--methods", "ar,hsd",
                 "--out", str(out), "-q"]) == 0
    data = json.loads((out / "bench.json").read_text())
    assert data["info"]["reference_kind"] == "model:fakeocr"
    for p in data["pages"]:
        human = p["human_reference"]
        assert set(human["methods"]) == {"ar", "hsd"}
        # each target writes its own reference: the model's **Outlook** is not the human's ## Outlook
        assert p["methods"]["hsd"]["edit_distance"] == 0.0 and human["methods"]["hsd"]["edit_distance"] == 0.0
        assert human["methods"]["ar"]["forward_passes"] == human["reference_tokens"] + 1
    assert data["pages"][0]["reference_chars"] != data["pages"][0]["human_reference"]["reference_chars"]
    report = (out / "report.md").read_text()
    assert "target output = recorded output of fakeocr" in report
    assert "## Beside the human reference (3 pages" in report and "target output = human reference" in report
    assert "recorded output of fakeocr" in capsys.readouterr().out


def test_a_human_corpus_has_no_comparison(synthetic_corpus, tmp_path):
    out = tmp_path / "out"
    assert main(["bench", str(synthetic_corpus), "--drafter", "textlayer", "--tokenizer", "tiny", "--methods",
                 "ar,hsd", "--out", str(out), "-q"]) == 0
    data = json.loads((out / "bench.json").read_text())
    assert data["info"]["reference_kind"] == "human" and "human_reference" not in data["pages"][0]
    assert "target output = human reference" in (out / "report.md").read_text()
