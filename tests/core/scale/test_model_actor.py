"""The work units of a distributed run, without Ray: the same pages as on one machine."""

from __future__ import annotations

import pytest

from core.engine import Engine
from core.scale.cli import split_address
from core.scale.jobs import expand_inputs, plan_documents
from core.scale.pages import RenderedPage, convert_rendered, render_and_draft


@pytest.fixture(scope="module")
def engine(scale_config):
    return Engine(scale_config)


def test_render_and_draft_then_decode_is_the_single_machine_page(engine, scale_inputs):
    from core import page_pipeline
    from core.documents import open_document

    path = scale_inputs[0]
    with open_document(path) as doc:
        page = page_pipeline.render_and_draft(doc.page(1), engine.config.dpi, engine.drafter)
        expected = engine.convert_image(page.image, page.drafts, page.width, page.height, page.number)
        image = page.image
    rendered = RenderedPage.loads(render_and_draft(7, str(path), 1, engine.config.dpi, "textlayer").dumps())
    assert (rendered.doc, rendered.number, rendered.error) == (7, 2, None)
    assert rendered.image().tobytes() == image.tobytes()  # pixels survive the trip: figures crop the same
    assert rendered.regions == expected.regions
    result = convert_rendered(engine, rendered)
    assert result.markdown == expected.markdown and result.output_tokens == expected.output_tokens
    assert result.to_dict()["regions"] == expected.to_dict()["regions"]
    assert result.page_image is None  # no figure regions: no image travels back


def test_figures_travel_back_and_crop_like_the_single_path(engine, scale_inputs, tmp_path):
    from core.documents import open_document
    from core.drafters.base import Region
    from core.export import DocumentOutput

    path = scale_inputs[0]
    rendered = render_and_draft(0, str(path), 1, engine.config.dpi, "textlayer")
    rendered.regions.append(Region("figure", (40.0, 150.0, 260.0, 300.0), "", "test"))
    result = convert_rendered(engine, RenderedPage.loads(rendered.dumps()))
    assert result.page_image is not None
    with open_document(path) as doc:
        direct = doc.page(1).render(engine.config.dpi)
    settings = {"test": 1}
    DocumentOutput(path, tmp_path / "a" / "x.md", settings).save_page(result, result.page_image)
    DocumentOutput(path, tmp_path / "b" / "x.md", settings).save_page(result, direct)
    a, b = (sorted((tmp_path / d / "x_images").glob("*.png")) for d in ("a", "b"))
    assert len(a) == 1 and a[0].read_bytes() == b[0].read_bytes()


def test_a_failing_page_is_retried_then_recorded(engine, scale_inputs):
    calls = []

    class Flaky:
        config = engine.config

        def convert_image(self, *a, **kw):
            calls.append(1)
            if len(calls) < 3:
                raise RuntimeError("transient")
            return engine.convert_image(*a, **kw)

    rendered = render_and_draft(0, str(scale_inputs[0]), 0, engine.config.dpi, "textlayer")
    assert convert_rendered(Flaky(), rendered, retries=2).error is None and len(calls) == 3
    calls.clear()
    failed = convert_rendered(Flaky(), rendered, retries=1)
    assert failed.error == "RuntimeError: transient" and failed.markdown == "" and len(calls) == 2


def test_an_unreadable_page_becomes_a_failed_page(engine, tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 nonsense")
    rendered = render_and_draft(0, str(bad), 0, 72, "textlayer", retries=1)
    assert rendered.error and rendered.attempts == 2
    result = convert_rendered(engine, rendered)
    assert result.error == rendered.error and result.page == 1


def test_folders_expand_sorted_and_plan_skips_finished_pages(tmp_path, scale_inputs, engine):
    from core.api import output_paths, settings_of

    (tmp_path / "in" / "sub").mkdir(parents=True)
    for p in scale_inputs:
        (tmp_path / "in" / "sub" / p.name).write_bytes(p.read_bytes())
    (tmp_path / "in" / "notes.txt").write_text("not a document")
    (tmp_path / "in" / ".hidden.pdf").write_bytes(scale_inputs[0].read_bytes())
    inputs = expand_inputs([tmp_path / "in"])
    assert [p.name for p in inputs] == ["alpha.pdf", "beta.pdf", "gamma.pdf"]
    outputs = output_paths(inputs, tmp_path / "out")
    settings = settings_of(engine.config)
    plan = plan_documents(inputs, outputs, settings, None, None, fresh=False)
    assert [len(j.todo) for j in plan] == [3, 2, 1]
    job = plan[1]
    job.add(convert_rendered(engine, render_and_draft(1, str(job.input_path), 0, engine.config.dpi, "textlayer")))
    again = plan_documents(inputs, outputs, settings, None, None, fresh=False)
    assert again[1].todo == [1]
    ((index, saved),) = again[1].plan.steps()  # page 2, after page 1 joins the history
    assert index == 1 and [r.page for r in saved] == [1] and saved[0].markdown == job.results[1].markdown
    assert [(i, s) for i, s in plan[0].plan.steps()] == [(0, []), (1, []), (2, [])]
    assert plan_documents(inputs, outputs, settings, None, None, fresh=True)[1].todo == [0, 1]


def test_ray_address_or_first_input(tmp_path):
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(b"%PDF-")
    assert split_address("local", ["x"]) == ("local", ["x"])
    assert split_address("10.0.0.5:6379", ["x"]) == ("10.0.0.5:6379", ["x"])
    assert split_address("ray://head:10001", ["x"]) == ("ray://head:10001", ["x"])
    assert split_address("auto", ["x"]) == ("auto", ["x"])
    assert split_address(str(pdf), ["x"]) == ("local", [str(pdf), "x"])


def test_user_errors_are_found_inside_ray_errors():
    from core.errors import ModelLoadError
    from core.scale.ray_pipeline import _user_error

    original = ModelLoadError("no model at /nowhere")

    class TaskError(ModelLoadError):  # how Ray wraps: a subclass of the original type, traceback text
        def __init__(self):
            super().__init__("Traceback (most recent call last): ... long ...")
            self.cause = original

    try:
        try:
            raise TaskError()
        except TaskError as inner:
            raise RuntimeError("dataset failed") from inner
    except RuntimeError as outer:
        assert _user_error(outer) is original
    assert _user_error(RuntimeError("plain")) is None


def test_an_unusable_drafter_stops_the_run_not_each_page(scale_inputs, monkeypatch):
    import core.scale.pages as pages
    from core.errors import DrafterUnavailableError

    def unavailable(name):
        raise DrafterUnavailableError(f"drafter {name!r} is not installed")

    monkeypatch.setattr(pages, "_drafter", unavailable)
    rendered = render_and_draft(0, str(scale_inputs[0]), 0, 72, "paddle")
    assert rendered.fatal == "drafter 'paddle' is not installed" and rendered.error is None
