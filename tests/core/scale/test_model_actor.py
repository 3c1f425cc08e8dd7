"""The parts of a Ray run that need no Ray: the model actor's decode (called here directly), the
inputs, the address, errors inside Ray's errors."""

from __future__ import annotations

import pickle

import pytest

from core.engine import Engine
from core.events import TextAppended
from core.scale.cli import split_address
from core.scale.inputs import expand_inputs
from core.scale.ray_pipeline import ModelActor, ShippedPage
from tests.core.scale.streamed import streamed


@pytest.fixture(scope="module")
def engine(scale_config):
    return Engine(scale_config)


def _shipped(engine, path, index: int, extra=()) -> tuple[ShippedPage, object]:
    """Page ``index`` of ``path`` rendered and drafted as a run does, packed for the trip to an
    actor and back out of a pickle (as Ray sends it); and the page as drafted."""
    from core import page_pipeline
    from core.documents import open_document

    with open_document(path) as doc:
        page = page_pipeline.render_and_draft(doc.page(index), engine.config.dpi, engine.drafter)
    regions = page.drafts.result() + list(extra)
    shipped = ShippedPage(page.number, page.width, page.height, page.image, regions, page.drafts.error,
                          page.drafts.seconds, dict(page.seconds))
    return pickle.loads(pickle.dumps(shipped)), page


def _decode(actor: ModelActor, key: str, shipped: ShippedPage, remembered=(), told: list | None = None):
    """The page's result from the actor's stream (its events, in order, appended to ``told``)."""
    rows = list(actor.decode(key, list(remembered), shipped))
    assert "result" in rows[-1] and all("events" in row for row in rows[:-1])
    if told is not None:
        told.extend(event for row in rows[:-1] for event in row["events"])
    return pickle.loads(rows[-1]["result"])


def test_the_actor_decodes_a_page_as_the_engine_on_one_machine(engine, scale_inputs):
    shipped, page = _shipped(engine, scale_inputs[0], 1)
    assert shipped.image.tobytes() == page.image.tobytes()  # pixels survive the trip: figures crop the same
    expected = Engine(engine.config, target=engine.target).decode_image(page).finish()
    actor = ModelActor(engine.config, lambda config: Engine(config, target=engine.target), retries=0)
    assert actor.ready() == ""
    result = _decode(actor, str(scale_inputs[0]), shipped)
    assert result.markdown == expected.markdown and result.output_tokens == expected.output_tokens
    assert result.to_dict()["regions"] == expected.to_dict()["regions"] and result.error is None


def test_the_actor_streams_the_events_a_decode_on_one_machine_tells(engine, scale_inputs):
    """The page's events (its streamed text, regions verified) come back from the actor in the
    order the engine on one machine tells them, before the page's result. Untimed, so that the
    passes do not depend on how fast this machine happens to be."""
    from dataclasses import replace

    from core.speculative.proposal_config import ProposalConfig

    config = replace(engine.config, proposal=ProposalConfig(cost_aware=False))
    shipped, page = _shipped(engine, scale_inputs[0], 0)
    local: list = []
    expected = Engine(config, target=engine.target).decode_image(page, on_event=local.append).finish()
    actor = ModelActor(config, lambda config: Engine(config, target=engine.target), retries=0)
    told: list = []
    result = _decode(actor, str(scale_inputs[0]), pickle.loads(pickle.dumps(shipped)), told=told)
    assert result.markdown == expected.markdown
    assert local and any(isinstance(e, TextAppended) for e in told)
    assert streamed(told) == streamed(local)  # text, regions and their statistics


def test_the_actor_s_engine_keeps_the_document_s_history(engine, scale_inputs):
    """Pages of one document sent to one actor are drafted from the ones before them, also from
    pages saved by an earlier run (``remembered``), exactly as a run on one machine."""
    path = str(scale_inputs[0])
    first, _ = _shipped(engine, scale_inputs[0], 0)
    second, _ = _shipped(engine, scale_inputs[0], 1)
    in_order = ModelActor(engine.config, lambda config: Engine(config, target=engine.target), retries=0)
    saved = _decode(in_order, path, first)
    uninterrupted = _decode(in_order, path, second)
    resumed = ModelActor(engine.config, lambda config: Engine(config, target=engine.target), retries=0)
    again = _decode(resumed, path, second, remembered=[saved])
    assert (again.markdown, again.stats.forward_passes) == (uninterrupted.markdown,
                                                            uninterrupted.stats.forward_passes)


def test_a_failing_page_is_retried_then_recorded(engine, scale_inputs):
    calls = []

    class Flaky(Engine):
        def decode_image(self, page, on_event=None, should_cancel=None):
            calls.append(page.number)
            if len(calls) < 3:
                raise RuntimeError("transient")
            return super().decode_image(page, on_event, should_cancel)

    shipped, _ = _shipped(engine, scale_inputs[0], 0)
    actor = ModelActor(engine.config, lambda config: Flaky(config, target=engine.target), retries=2)
    assert _decode(actor, "a", shipped).error is None and len(calls) == 3
    calls.clear()
    actor = ModelActor(engine.config, lambda config: Flaky(config, target=engine.target), retries=1)
    failed = _decode(actor, "a", shipped)
    assert failed.error == "RuntimeError: transient" and failed.markdown == "" and len(calls) == 2


def test_a_model_that_cannot_load_is_told_in_one_line(scale_config, tmp_path):
    from dataclasses import replace

    actor = ModelActor(replace(scale_config, model=str(tmp_path / "nowhere")), None, retries=0)
    error = actor.ready()
    assert error and "\n" not in error and "Traceback" not in error


def test_folders_expand_sorted(tmp_path, scale_inputs):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    for p in scale_inputs:
        (tmp_path / "in" / "sub" / p.name).write_bytes(p.read_bytes())
    (tmp_path / "in" / "notes.txt").write_text("not a document")
    (tmp_path / "in" / ".hidden.pdf").write_bytes(scale_inputs[0].read_bytes())
    inputs = expand_inputs([tmp_path / "in"])
    assert [p.name for p in inputs] == ["alpha.pdf", "beta.pdf", "gamma.pdf"]


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


def test_drafting_tasks_are_at_least_one(tmp_path, scale_inputs, capsys):
    from core.cli import main

    assert main(["convert", "--ray", str(scale_inputs[0]), "-o", str(tmp_path / "a.md"),
                 "--ray-drafting-tasks", "0"]) != 0
    assert "--ray-drafting-tasks must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "a.md").exists()


def test_a_page_decoded_before_its_drafts_waits_on_the_actor_for_them(engine, scale_inputs):
    """Decoding beside the drafting, a page whose decode ends before its drafts gives its result so
    far (no regions) and stays on the actor; ``finish`` gives the whole result once they came, the
    one a decode on one machine gives; an actor that does not hold the page says so (None)."""
    from dataclasses import replace

    from core.drafters.background import DraftJob
    from core.page_pipeline import PendingDrafts

    shipped, page = _shipped(engine, scale_inputs[0], 1)
    pending = PendingDrafts()

    class Undrafted(ShippedPage):
        def drafting(self):
            return pending

    config = replace(engine.config, background_drafting="on")
    late = Undrafted(**{name: getattr(shipped, name) for name in shipped.__dataclass_fields__})
    actor = ModelActor(config, lambda config: Engine(config, target=engine.target), retries=0)
    rows = list(actor.decode("a", [], late))
    assert "so_far" in rows[-1] and "result" not in rows[-1]
    so_far = pickle.loads(rows[-1]["so_far"])
    passes = so_far.stats.stage1_passes + so_far.stats.stage2_passes
    assert so_far.regions == [] and so_far.stats.passes_before_drafts == passes > 0
    assert actor.finish("a", 1) is None  # not this page
    pending.deliver(DraftJob.finished(shipped.regions))
    whole = pickle.loads(actor.finish("a", late.number))
    expected = Engine(config, target=engine.target).decode_image(page).finish()
    assert whole.markdown == so_far.markdown == expected.markdown and whole.regions == expected.regions != []
    assert whole.output_tokens == so_far.output_tokens and actor.finish("a", late.number) is None
