"""``hsd convert``'s progress line and summary, in words: what is counted, what runs, for how long."""

from __future__ import annotations

from core.commands.progress import ProgressLine, RunTally, page_words
from core.stats import format_duration
from core.events import (DocumentPlanned, ModelLoaded, ModelLoading, PageDone, PageDrafting, PageStarted,
                         RegionsDrafted, TextAppended)
from core.results import PageResult, PageStats


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _result(page, tokens=812, passes=190, error=None):
    return PageResult(page=page, width=1, height=1, markdown="", regions=[], region_stats=[], region_outputs=[],
                      spans=[], stats=PageStats(mode="hsd", generated_tokens=tokens, forward_passes=passes),
                      error=error)


def test_the_line_says_what_runs_in_words():
    clock = Clock()
    line = ProgressLine("doc.pdf", quiet=True, clock=clock)
    line.handle(DocumentPlanned(path="doc.pdf", output="doc.md", page_count=5, pages=(1, 2, 3, 4, 5), kept=(1, 2)))
    line.handle(ModelLoading(model="tencent/HunyuanOCR"))
    line.handle(PageDrafting(page=3, drafter="rapidocr"))
    clock.now += 12.4
    assert line.text() == "loading the model 12 s · page 3: drafting (OCR) 12 s"
    line.handle(ModelLoaded(model="tencent/HunyuanOCR", seconds=12.4))
    line.handle(RegionsDrafted(page=3, regions=[], seconds=12.4))
    line.handle(PageStarted(page=3, index=0, total=3))
    line.handle(PageDrafting(page=4, drafter="textlayer"))
    line.handle(TextAppended(page=3, text="x" * 1204))
    clock.now += 1
    assert line.text() == "page 3: 1,204 characters written · page 4: drafting (text layer) 1 s"
    line.handle(RegionsDrafted(page=4, regions=[], seconds=0.1))
    line.handle(PageDone(page=3, result=_result(3)))
    assert line.text() == "page 3: 812 tokens in 190 passes (4.3 tokens a pass)"
    line.close()


def test_a_finished_page_in_words():
    assert page_words(_result(2, 100, 101)) == "page 2: 100 tokens in 101 passes (1.0 tokens a pass)"
    assert page_words(_result(2, error="boom")) == "page 2 failed"
    assert [format_duration(s) for s in (4.2, 65, 3725)] == ["4 s", "1 min 05 s", "1 h 02 min"]


def test_the_run_ends_with_one_summary_line():
    class Run:
        kept = [1, 2]

    clock = Clock()
    tally = RunTally(clock)
    tally.add(Run(), "out/doc.md", [_result(3), _result(4, 188, 40), _result(5, error="boom")])
    clock.now += 75
    line = tally.summary(["doc.pdf"], "stats.json")
    assert line == ("hsd: doc.pdf -> out/doc.md: 2 pages converted, 2 kept from an earlier run, 1 failed; "
                    "1,000 tokens in 230 forward passes (4.3 tokens a pass); 1 min 15 s; statistics in stats.json")
    tally.add(Run(), "out/sub/b.md", [])
    assert tally.summary(["doc.pdf", "sub/b.pdf"], None).startswith("hsd: 2 documents -> out/: ")


def test_the_fast_engine_s_compile_is_told_as_a_step_of_loading(capsys):
    line = ProgressLine("doc.pdf", clock=Clock())
    line.handle(ModelLoaded(model="m", seconds=62.0, compile_seconds=41.5))
    line.handle(ModelLoaded(model="m", seconds=3.0))  # eager: nothing to tell
    assert capsys.readouterr().err.splitlines() == ["hsd: model loaded in 62 s, of which 42 s compiling its passes"]
    quiet = ProgressLine("doc.pdf", quiet=True, clock=Clock())
    quiet.handle(ModelLoaded(model="m", seconds=62.0, compile_seconds=41.5))
    assert capsys.readouterr().err == ""
