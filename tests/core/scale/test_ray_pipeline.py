"""``hsd convert --ray`` on a local Ray instance (CPU, tiny model): same output as the single-machine
path, resume after an interruption, a failing page isolated, a killed model worker's pages redone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.engine import Engine
from tests.core.scale.conftest import cli_args, output_files, review_of
from tests.core.scale.streamed import streamed

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # Ray Data's own, at import
              pytest.mark.usefixtures("workers_unpickle_this_module")]


class LoggingEngine(Engine):
    """Appends "<page number> <first draft word>" to a log file per decode, so the test can tell
    which pages (of which documents) a run converted, across worker processes."""

    log: str = ""
    fail_page: int | None = None    # raise on every attempt at this page number
    crash_page: int | None = None   # kill the worker process the first time it sees this page

    def decode_image(self, page, on_event=None, should_cancel=None):
        found = page.drafts.result()
        doc = found[0].text.split()[0] if found else "?"
        with open(self.log, "a") as f:
            f.write(f"{doc} {page.number}\n")
        if page.number == self.fail_page:
            raise RuntimeError("injected failure")
        marker = Path(self.log + ".crashed")
        if page.number == self.crash_page and not marker.exists():
            marker.write_text("once")
            os._exit(1)
        return super().decode_image(page, on_event, should_cancel)


def factory(log: Path, **attrs):
    def make(config):
        engine = LoggingEngine(config)
        engine.log = str(log)
        for k, v in attrs.items():
            setattr(engine, k, v)
        return engine
    return make


def logged(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(d, int(p)) for d, p in (line.split() for line in log.read_text().splitlines())]


def single_markdown_of(folder: Path, name: str, pages: list[int]) -> bytes:
    """The single-machine document ``name`` made of ``pages`` only (from its saved pages)."""
    from core.export import assemble, page_markdown
    from core.results import PageResult

    texts = []
    for page in pages:
        data = json.loads((folder / f".{name}.md.hsd" / f"page-{page:04d}.json").read_text("utf-8"))
        texts.append(page_markdown(PageResult.from_dict(data["result"]), data.get("figures", {})))
    return assemble(texts).encode("utf-8")


def test_cli_output_is_identical_to_single_machine(ray_local, scale_inputs, scale_model, single_output,
                                                   tmp_path):
    from core.cli import main

    folder = tmp_path / "in"
    folder.mkdir()
    for p in scale_inputs:
        (folder / p.name).write_bytes(p.read_bytes())
    out = tmp_path / "out"
    stats, review = tmp_path / "stats.json", tmp_path / "review.json"
    assert main(["convert", "--ray", str(folder), "-o", str(out), *cli_args(scale_model),
                 "--stats", str(stats), "--review", str(review)]) == 0
    assert output_files(out) == output_files(single_output)
    # the review of the departures, from the pages the run emits, is the single machine's
    expected = review_of(single_output.parent / "review.json")
    assert review_of(review) == expected and [d["file"] for d in expected] == ["alpha.pdf", "beta.pdf", "gamma.pdf"]
    assert all(d["pages"] for d in expected)
    assert set(output_files(out)) == {"alpha.md", "beta.md", "gamma.md"}
    docs = json.loads(stats.read_text())["documents"]
    assert [d["totals"]["pages"] for d in docs] == [3, 2, 1]


def test_interrupted_run_resumes_without_redoing_finished_documents(ray_local, scale_inputs, scale_config,
                                                                   single_output, tmp_path):
    from core.scale.ray_pipeline import RayOptions, convert_with_ray

    out, log = tmp_path / "out", tmp_path / "pages.log"
    options = RayOptions(batch_size=1)

    saved = []

    def stop_after_first_document(progress):
        if progress.documents_done >= 1:
            saved.append(progress.pages_done)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convert_with_ray(scale_inputs, out, scale_config, options=options,
                         engine_factory=factory(log), on_progress=stop_after_first_document)
    finished = [p.stem for p in scale_inputs if (out / f"{p.stem}.md").exists()]
    assert finished, "the first run finished no document before it was stopped"
    # Each run logs to its own file: the test's Ray outlives the interrupted run, whose in-flight
    # page may still finish (and log) after it was stopped.
    log = tmp_path / "pages-2.log"
    report = convert_with_ray(scale_inputs, out, scale_config, options=options, engine_factory=factory(log))
    second = logged(log)
    assert not {d for d, _ in second} & set(finished), "a finished document was converted again"
    # pages saved before the stop are kept (those the stop found decoded too: a run saves a page
    # whose decode has ended); only the pages not saved are decoded again
    assert report.progress.pages_skipped >= saved[0] >= 1
    assert len(second) == report.progress.pages_total == 6 - report.progress.pages_skipped
    assert output_files(out) == output_files(single_output)
    # and a third run converts nothing at all
    log = tmp_path / "pages-3.log"
    again = convert_with_ray(scale_inputs, out, scale_config, options=options, engine_factory=factory(log))
    assert logged(log) == [] and again.progress.pages_total == 0 and len(again.documents) == 3
    assert output_files(out) == output_files(single_output)


def test_a_failing_page_is_retried_recorded_and_isolated(ray_local, scale_inputs, scale_config,
                                                         single_output, tmp_path):
    from core.scale.ray_pipeline import RayOptions, convert_with_ray

    out, log = tmp_path / "out", tmp_path / "pages.log"
    report = convert_with_ray(scale_inputs, out, scale_config, options=RayOptions(retries=1),
                              engine_factory=factory(log, fail_page=2))
    failed = {Path(d["file"]).stem: d["totals"]["failed_pages"] for d in report.documents}
    assert failed == {"alpha": [2], "beta": [2], "gamma": []}
    assert report.failed and report.progress.pages_failed == 2
    page2 = [d for d, p in logged(log) if p == 2]
    assert sorted(page2) == ["alpha", "alpha", "beta", "beta"]  # one retry each, then recorded
    error = next(p for p in report.documents[0]["pages"] if p["page"] == 2)["error"]
    assert error == "RuntimeError: injected failure"
    ref, got = output_files(single_output), output_files(out)
    assert got["gamma.md"] == ref["gamma.md"]
    # the other pages are written: the single-machine document without page 2
    for name, pages in (("alpha", [1, 3]), ("beta", [1])):
        assert got[f"{name}.md"] == single_markdown_of(single_output, name, pages)
    # a re-run (the failure gone) redoes only the failed pages and completes the output
    log.unlink()
    convert_with_ray(scale_inputs, out, scale_config, engine_factory=factory(log))
    assert sorted(logged(log)) == [("alpha", 2), ("beta", 2)]
    assert output_files(out) == output_files(single_output)


def test_a_killed_model_worker_is_replaced_and_its_pages_redone(ray_local, scale_inputs, scale_config,
                                                                single_output, tmp_path):
    from core.scale.ray_pipeline import RayOptions, convert_with_ray

    out, log = tmp_path / "out", tmp_path / "pages.log"
    report = convert_with_ray(scale_inputs, out, scale_config, options=RayOptions(batch_size=2),
                              engine_factory=factory(log, crash_page=3))
    assert Path(str(log) + ".crashed").exists(), "the worker was never killed"
    assert not report.failed and report.progress.pages_done == 6
    assert output_files(out) == output_files(single_output)


def _pages_of(config, inputs, out) -> dict:
    """(document, page) -> (Markdown, forward passes) of a Ray run, read back from its saved pages."""
    from core.api import output_paths, settings_of
    from core.documents import open_document
    from core.export import DocumentOutput

    got = {}
    for in_path, out_path in zip(inputs, output_paths(inputs, out)):
        saved = DocumentOutput(in_path, out_path, settings_of(config), resume=True)
        with open_document(in_path) as doc:
            for page in range(1, doc.page_count + 1):
                result = saved.finished(page)
                got[(in_path.stem, page)] = result and (result.markdown, result.stats.forward_passes)
    return got


def test_ray_pages_have_the_single_machine_history_markdown_and_passes(ray_local, scale_inputs, scale_config,
                                                                      tmp_path):
    """Every page on Ray is drafted from its document's earlier pages (history and learned notation)
    as on one machine, so not only the Markdown but every page's forward passes are the same; also
    with two actors sharing the documents and on a resumed run. Untimed, so that passes do not
    depend on how fast this machine happens to be."""
    from dataclasses import replace

    from core.api import ConversionRequest, convert_document
    from core.documents import open_document
    from core.events import PageDone
    from core.page_pipeline import render_and_draft
    from core.scale.ray_pipeline import RayOptions, convert_with_ray
    from core.speculative.proposal_config import ProposalConfig

    config = replace(scale_config, max_new_tokens=48, proposal=ProposalConfig(cost_aware=False))
    single, alone = {}, {}
    engine = Engine(config)
    for path in scale_inputs:
        request = ConversionRequest(path, tmp_path / "single" / f"{path.stem}.md", config)
        for event in convert_document(request, engine):
            if isinstance(event, PageDone):
                single[(path.stem, event.page)] = (event.result.markdown, event.result.stats.forward_passes)
        with open_document(path) as doc:
            for i in range(doc.page_count):  # each page without its document's history
                page = render_and_draft(doc.page(i), config.dpi, engine.drafter)
                result = Engine(config, target=engine.target).decode_image(page).finish()
                alone[(path.stem, result.page)] = (result.markdown, result.stats.forward_passes)
    assert {k: v[0] for k, v in alone.items()} == {k: v[0] for k, v in single.items()}
    assert alone != single, "history changes no page's passes here: the test would prove nothing"

    options = RayOptions(actors=2, cpus_per_actor=0.5, batch_size=1)
    out = tmp_path / "out"
    report = convert_with_ray(scale_inputs, out, config, options=options)
    assert not report.failed
    assert _pages_of(config, scale_inputs, out) == single

    # a resumed run: the saved pages before each page still to do join its history first (page 1
    # of each document saved by a single-machine run, which writes the same resume folder)
    partial = tmp_path / "partial"
    for path in scale_inputs:
        request = ConversionRequest(path, partial / f"{path.stem}.md", config, pages="1")
        assert [e.page for e in convert_document(request, engine) if isinstance(e, PageDone)] == [1]
    again = convert_with_ray(scale_inputs, partial, config, options=options)
    assert again.progress.pages_total == 3 and again.progress.pages_skipped == 3
    assert _pages_of(config, scale_inputs, partial) == single


def test_a_ray_run_tells_the_events_of_a_run_on_one_machine(ray_local, scale_inputs, scale_config, tmp_path):
    """The same typed events, page for page, as the single-machine run of the document, those told
    during a page's passes (its text as it is written, its regions as they are verified) too, so
    the command's progress line reads the same. Untimed, so that both runs make the same passes."""
    from collections import Counter
    from dataclasses import replace

    from core.api import ConversionRequest, convert_document
    from core.events import DocumentDone, PageDone, RegionsDrafted, RegionVerified
    from core.scale.ray_pipeline import RayDocuments, RayOptions
    from core.speculative.proposal_config import ProposalConfig

    config = replace(scale_config, proposal=ProposalConfig(cost_aware=False))

    def told(run) -> tuple[Counter, list]:
        with run:
            events = list(run)
        assert isinstance(events[-1], DocumentDone)
        return Counter((type(e).__name__, getattr(e, "page", None)) for e in events), events

    def during_passes(events) -> tuple[list, dict]:
        regions, text = streamed(events)
        return [e for e in regions if isinstance(e, RegionVerified)], text

    path = scale_inputs[0]
    local, local_events = told(convert_document(ConversionRequest(path, tmp_path / "one" / "a.md", config)))
    with RayDocuments(config, RayOptions(batch_size=1)) as documents:
        (run,) = documents.runs([ConversionRequest(path, tmp_path / "ray" / "a.md", config)])
        on_ray, ray_events = told(run)
    def without_text(counts: Counter) -> Counter:  # text events follow the clock (``TextStream``)
        return Counter({key: n for key, n in counts.items() if key[0] != "TextAppended"})

    assert without_text(on_ray) == without_text(local) and on_ray[("PageDone", 3)] == 1
    assert on_ray[("TextAppended", 3)] >= 1
    assert during_passes(ray_events) == during_passes(local_events)
    # drafted on the cluster: the regions of the drafter on this machine
    regions = [(e.page, e.regions) for e in ray_events if isinstance(e, RegionsDrafted)]
    assert regions == [(e.page, e.regions) for e in local_events if isinstance(e, RegionsDrafted)]
    markdown = [e.result.markdown for e in ray_events if isinstance(e, PageDone)]
    assert markdown == [e.result.markdown for e in local_events if isinstance(e, PageDone)]


def _scanned_pdf(path: Path, pages: int) -> Path:
    """Pages that are images of printed lines, no text layer: only OCR drafts them."""
    import pymupdf

    doc = pymupdf.open()
    for p in range(pages):
        with pymupdf.open() as printed:
            page = printed.new_page(width=300, height=160)
            for i, line in enumerate([f"Scanned page {p + 1} of the archive", f"Revenue grew {p * 7 + 3} percent."]):
                page.insert_text((20, 50 + 30 * i), line, fontsize=14)
            pixels = page.get_pixmap(dpi=150)
        scan = doc.new_page(width=300, height=160)
        scan.insert_image(scan.rect, stream=pixels.tobytes("png"))
    doc.save(path)
    doc.close()
    return path


def test_a_scan_is_drafted_on_the_cluster_as_on_one_machine(ray_local, scale_config, tmp_path):
    """OCR on Ray CPU tasks, two pages drafting at once: the regions, the Markdown and the passes
    of the run on one machine."""
    from dataclasses import replace

    from core.api import ConversionRequest, convert_document
    from core.events import PageDone, RegionsDrafted
    from core.scale.ray_pipeline import RayDocuments, RayOptions
    from core.speculative.proposal_config import ProposalConfig

    config = replace(scale_config, drafter="rapidocr:layout=false", proposal=ProposalConfig(cost_aware=False))
    path = _scanned_pdf(tmp_path / "scan.pdf", 3)

    def drafts_and_pages(run):
        with run:
            events = list(run)
        return ([(e.page, e.regions) for e in events if isinstance(e, RegionsDrafted)],
                [(e.page, e.result.markdown, e.result.stats.forward_passes, e.result.draft_failure)
                 for e in events if isinstance(e, PageDone)])

    local = drafts_and_pages(convert_document(ConversionRequest(path, tmp_path / "one" / "s.md", config)))
    with RayDocuments(config, RayOptions(drafting_window=2)) as documents:
        (run,) = documents.runs([ConversionRequest(path, tmp_path / "ray" / "s.md", config)])
        on_ray = drafts_and_pages(run)
    assert all(regions for _, regions in local[0]) and len(local[1]) == 3
    assert on_ray == local
