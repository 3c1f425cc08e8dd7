"""``hsd bench`` end to end on a corpus folder it has never seen (the synthetic one in conftest)."""

import json

import pytest

from core.bench.report import aggregate, markdown_report
from core.bench.runner import BenchConfig, parse_methods, run_bench
from core.cli import main
from core.errors import HSDError


def test_parse_methods():
    ms = parse_methods("page,hsd-tau0.75,hsd-oracle")
    assert [m.name for m in ms] == ["ar", "page", "hsd-tau0.75", "hsd-oracle"]  # ar always first
    assert ms[2].tau == 0.75 and ms[3].oracle and ms[3].mode == "hsd"
    with pytest.raises(HSDError):
        parse_methods("fast")


def test_cli_replay_end_to_end(synthetic_corpus, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["bench", str(synthetic_corpus), "--drafter", "textlayer", "--tokenizer", "tiny", "--out", str(out),
               "-q"])
    assert rc == 0
    data = json.loads((out / "bench.json").read_text())
    assert [(p["doc"], p["page"]) for p in data["pages"]] == [("alpha_report", 1), ("alpha_report", 2),
                                                              ("beta_note", 1)]
    for p in data["pages"]:
        assert set(p["methods"]) == {"ar", "page", "regions", "hsd", "hsd-tau0.75", "hsd-oracle"}
        assert p["methods"]["hsd"]["edit_distance"] == 0.0  # replay at tau 1 writes the reference
        assert p["methods"]["hsd"]["forward_passes"] < p["methods"]["ar"]["forward_passes"]
    agg = data["aggregate"]
    assert agg["overall"]["hsd"]["pages"] == 3  # nothing dropped
    assert agg["targets"]["fp_speedup_mean"]["value"] > 1.5
    report = (out / "report.md").read_text()
    assert "## Targets" in report and "alpha_report" in report
    for png in ("speedup_by_kind.png", "accepted_length_hist.png", "passes_vs_length.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert "3 pages, 2 documents" in capsys.readouterr().out


def test_cli_rejects_a_folder_without_pairs(tmp_path, capsys):
    assert main(["bench", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "not a corpus folder" in capsys.readouterr().err


def test_real_tiny_model_lossless_and_cost_replay(synthetic_corpus, tiny_target_dir):
    model = str(tiny_target_dir("hunyuan_vl"))
    base = dict(corpus=str(synthetic_corpus), model=model, methods="hsd", docs=["beta"], drafter="textlayer",
                max_new_tokens=40, tokenizer="tiny", dpi=36)
    real = run_bench(BenchConfig(target="real", **base), log=lambda s: None)
    agg = aggregate(real)
    assert agg["lossless"] == {"pages": 1, "identical": 1}
    cost = run_bench(BenchConfig(target="replay-cost", **base), log=lambda s: None)
    hsd = cost["pages"][0]["methods"]["hsd"]
    assert hsd["edit_distance"] == 0.0 and hsd["forward_passes"] < cost["pages"][0]["methods"]["ar"]["forward_passes"]


def test_cost_replay_with_the_drafter_beside_the_decode(synthetic_corpus, tiny_target_dir):
    """As a GPU conversion runs: hsd and page draft the page again, beside their decode; their
    wall-clock is their document run's alone (it spans the drafter), ar reads no drafts."""
    cfg = BenchConfig(corpus=str(synthetic_corpus), target="replay-cost", model=str(tiny_target_dir("hunyuan_vl")),
                      methods="page,hsd", docs=["beta"], drafter="textlayer", max_new_tokens=40, tokenizer="tiny",
                      dpi=36, background_drafting="on")
    res = run_bench(cfg, log=lambda s: None)
    page = res["pages"][0]
    assert "on a thread beside" in markdown_report(res, aggregate(res))
    for name in ("page", "hsd"):
        m = page["methods"][name]
        assert m["background_drafting"]["same_regions"] and m["background_drafting"]["draft_seconds"] > 0
        assert 0 < m["engine_seconds"] <= m["wall_seconds"]  # the run's seconds for the page span its decode
        assert m["edit_distance"] == 0.0
    assert "background_drafting" not in page["methods"]["ar"]


def test_random_real_size_model_runs_shrunk(synthetic_corpus, monkeypatch):
    """The GPU configuration's code path (``--model hunyuan-ocr-random``), shrunk to run on a CPU."""
    from core.bench import replay

    monkeypatch.setattr(replay, "HUNYUAN_OCR_TEXT", dict(replay.HUNYUAN_OCR_TEXT, hidden_size=256, intermediate_size=512,
                                                         num_attention_heads=2, num_key_value_heads=1))
    monkeypatch.setattr(replay, "HUNYUAN_OCR_VISION", dict(replay.HUNYUAN_OCR_VISION, hidden_size=128,
                                                           intermediate_size=256, num_attention_heads=2,
                                                           out_hidden_size=256))
    cfg = BenchConfig(corpus=str(synthetic_corpus), target="replay-cost", model="hunyuan-ocr-random", cost_layers=1,
                      methods="hsd", docs=["beta"], drafter="textlayer", tokenizer="tiny", dpi=20, device="cpu",
                      dtype="fp32")
    res = run_bench(cfg, log=lambda s: None)
    assert "HunyuanOCR-size" in res["info"]["target_detail"]
    assert res["pages"][0]["methods"]["hsd"]["edit_distance"] == 0.0


def test_loading_the_drafters_models_is_not_charged_to_a_page(synthetic_corpus, monkeypatch):
    """The target loads before anything is timed; so does the drafter (``prepare``), or the first scan
    of a run would carry RapidOCR's model loading in its drafting time."""
    import time

    import core.bench.runner as runner
    from core.drafters.textlayer import TextLayerDrafter

    class SlowToLoad(TextLayerDrafter):
        loaded = False

        def prepare(self, page):
            if not self.loaded:
                time.sleep(0.5)
                self.loaded = True

        def draft(self, page):
            assert self.loaded
            return super().draft(page)

    monkeypatch.setattr(runner, "make_drafter", lambda name: (SlowToLoad(), "slow-to-load"))
    result = run_bench(BenchConfig(corpus=str(synthetic_corpus), methods="page", docs=["alpha"], tokenizer="tiny"),
                       log=lambda s: None)
    first, second = result["pages"]
    assert first["draft_load_seconds"] >= 0.5 > first["draft_seconds"]
    assert second["draft_load_seconds"] < 0.5
    assert "drafter models loaded in 0.5 s" in markdown_report(result, aggregate(result))


def test_simulated_gpu_end_to_end(synthetic_corpus, tmp_path, capsys):
    """Replay's output on a simulated GPU's clock: each method converts each document in one
    document run (drafting ahead, as hsd convert does), page and hsd drafting beside their decode;
    every record holds its simulated seconds, the decoding thread's CPU time and the passes before
    its drafts arrived; a document's pages add up to its run; the report says it is a simulation,
    what the cost model was, and gives each document's end-to-end seconds."""
    out = tmp_path / "sim"
    rc = main(["bench", str(synthetic_corpus), "--target", "simulated-gpu", "--gpu-pass-ms", "2",
               "--gpu-token-ms", "0.001", "--methods", "ar,page,hsd", "--drafter", "textlayer", "--tokenizer", "tiny",
               "--out", str(out), "-q"])
    assert rc == 0
    data = json.loads((out / "bench.json").read_text())
    for p in data["pages"]:
        hsd, ar = p["methods"]["hsd"], p["methods"]["ar"]
        assert hsd["edit_distance"] == 0.0 and hsd["gpu_seconds"] > 0 and hsd["decode_cpu_seconds"] > 0
        assert "background_drafting" in hsd and "background_drafting" not in ar
        assert ar["gpu_seconds"] >= 0.002 * ar["forward_passes"]
        assert hsd["background_drafting"]["same_regions"]  # the run's drafter read the page as the first drafting
        assert 0 <= hsd["passes_before_drafts"] <= hsd["forward_passes"] and ar["passes_before_drafts"] == 0
    def pages_of(doc):
        return [p for p in data["pages"] if p["doc"] == doc]

    for doc in ("alpha_report", "beta_note"):
        pages = pages_of(doc)
        run = pages[0]["document_run_seconds"]
        assert set(run) == {"ar", "page", "hsd"}
        for m in run:
            assert sum(p["methods"][m]["wall_seconds"] for p in pages) == pytest.approx(run[m], abs=0.5)
    report = (out / "report.md").read_text()
    assert "## Simulated GPU" in report and "A simulation, not a GPU run" in report
    assert "| alpha_report | 2 |" in report and "Passes before the page's drafts arrived" in report
    assert "2 ms a pass + 0.001 ms a token" in report
    # each document end to end (its whole run, drafting included) beside its pass speed-up
    e2e = data["aggregate"]["end_to_end"]
    alpha = e2e["per_document"]["alpha_report"]
    assert alpha["pages"] == 2 and alpha["seconds"]["hsd"] == pages_of("alpha_report")[0]["document_run_seconds"]["hsd"]
    assert alpha["passes"]["ar"] == sum(p["methods"]["ar"]["forward_passes"] for p in pages_of("alpha_report"))
    assert e2e["set"]["hsd"]["documents"] == 2 and e2e["multi_page"]["hsd"]["documents"] == 1
    target = data["aggregate"]["targets"]["end_to_end_over_passes"]
    assert target["value"] == pytest.approx(e2e["multi_page"]["hsd"]["over_passes"]) and target["met"] is not None
    assert "## Documents end to end" in report and "| alpha_report | 2 | hsd |" in report
    printed = capsys.readouterr().out
    assert "ms a pass" in printed and "documents end to end" in printed and "busy 0:" in printed


def test_a_trailing_comma_in_docs_names_no_extra_document():
    from core.commands.bench import named_documents

    assert named_documents("odb_01,") == ["odb_01"]
    assert named_documents(" a , b ") == ["a", "b"]
    assert named_documents("") is None and named_documents(None) is None
