"""The decode's own CPU a pass by phase (``tools.bench.decode_host_cpu``)."""

from __future__ import annotations

import json

from tools.bench import decode_host_cpu
from tools.bench.decode_host_cpu import PhaseClock


def test_a_phase_is_timed_without_the_phases_it_calls():
    class Work:
        def outer(self):
            self.inner()
            return "done"

        def inner(self):
            sum(range(20000))

    clock = PhaseClock()
    clock.wrap(Work, "outer", "outer")
    clock.wrap(Work, "inner", "inner")
    assert Work().outer() == "done" and not clock.calls  # off: nothing timed
    clock.on = True
    for _ in range(3):
        Work().outer()
    assert clock.calls == {"inner": 3, "outer": 3}
    assert clock.seconds["inner"] > 0 and clock.seconds["outer"] >= 0


def test_two_runs_on_pickled_drafts_decode_alike(synthetic_corpus, tmp_path):
    outs = []
    for k in range(2):  # the first drafts and pickles the pages, the second reads them back
        out = tmp_path / f"run{k}.json"
        assert decode_host_cpu.main([str(synthetic_corpus), "--docs", "beta_note", "--tokenizer", "tiny",
                                     "--drafts-cache", str(tmp_path / "drafts"), "--out", str(out)]) == 0
        outs.append(json.loads(out.read_text()))
    first, second = outs
    assert first["pages"] == second["pages"] >= 1
    assert first["page_passes"] == second["page_passes"] and first["page_outputs"] == second["page_outputs"]
    assert first["decode_passes"] > 0 and "propose: UnionProposal" in first["phases_ms_per_pass"]
    assert first["calls"]["cache: forward"] == first["decode_passes"]
    assert first["calls"]["admit (rest: crops, drafts)"] >= first["decode_passes"]  # asked after every pass
    assert "target: prefill (replay; not hsd)" in first["phases_ms_per_pass"]


def test_a_run_leaves_the_decode_and_the_benchmark_as_they_were(synthetic_corpus, tmp_path):
    from core.bench import runner
    from core.speculative import decode, proposers

    before = (decode.SpeculativeDecoder._pass, proposers.TextProposer.propose, runner.run_document,
              runner.render_and_draft, runner._compare_methods)
    decode_host_cpu.main([str(synthetic_corpus), "--docs", "beta_note", "--tokenizer", "tiny",
                          "--drafts-cache", str(tmp_path / "drafts")])
    assert before == (decode.SpeculativeDecoder._pass, proposers.TextProposer.propose, runner.run_document,
                      runner.render_and_draft, runner._compare_methods)


def test_a_compaction_threshold_changes_the_compactions_not_the_outputs(synthetic_corpus, tmp_path):
    from core.speculative import decode

    made = decode.row_caches
    outs = []
    for ratio in ("0", "1"):  # after every pass with a hole; never (no compaction drops every column)
        out = tmp_path / f"ratio{ratio}.json"
        assert decode_host_cpu.main([str(synthetic_corpus), "--docs", "beta_note", "--tokenizer", "tiny",
                                     "--drafts-cache", str(tmp_path / "drafts"), "--compact-ratio", ratio,
                                     "--out", str(out)]) == 0
        outs.append(json.loads(out.read_text()))
    always, never = outs
    assert decode.row_caches is made
    assert never["compactions"] == 0 < always["compactions"]
    assert always["page_passes"] == never["page_passes"] and always["page_outputs"] == never["page_outputs"]
